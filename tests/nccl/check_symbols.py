#!/usr/bin/env python3
"""check_symbols.py LIB HEADER [REFERENCE_LIB]

libnccl.so.2's dynamic symbols against the API: every function HEADER
(libcoll's nccl.h) declares is exported, with its p-prefixed twin, and so
are the device API's two host entry points (DEVICE_API_HOST: nccl_device.h
declares them; PyTorch links them; libcoll refuses the calls), and nothing
else is (no libcoll, spdlog or libstdc++ symbol leaks out to clash with the
program's).  With REFERENCE_LIB (NVIDIA's libnccl.so.2): every function it
exports is exported here too, except the rest of NCCL's device API and
ncclResetDebugInit, which libcoll does not implement (listed below, so a
new NCCL function shows up as a failure until it is implemented or listed).
Exit 0 when all hold, 1 with the differences printed otherwise."""
import re
import subprocess
import sys

DEVICE_API_HOST = {"ncclDevCommCreate", "ncclDevCommDestroy"}
NOT_IMPLEMENTED = re.compile(
    r"^p?(ncclTeam\w+|ncclLsaBarrierCreateRequirement|ncclGinBarrierCreateRequirement|"
    r"ncclLLA2A\w+|ncclResetDebugInit\w*)$")


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWiV":
            syms.add(parts[2])
    return syms


def declared(header):
    text = open(header).read()
    names = set(re.findall(r"NCCL_DECLARE_\(\s*[^,]+,\s*(nccl\w+)\s*,", text))
    names |= DEVICE_API_HOST
    return names | {"p" + n for n in names}


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__)
        return 2
    ours = exported(sys.argv[1])
    want = declared(sys.argv[2])
    bad = False
    if len(want) < 80:
        print(f"only {len(want)} functions found in {sys.argv[2]}: the header's format changed?")
        bad = True
    for name in sorted(want - ours):
        print(f"declared in nccl.h, not exported: {name}")
        bad = True
    for name in sorted(ours - want):
        print(f"exported, not in NCCL's API: {name}")
        bad = True
    if len(sys.argv) == 4:
        ref = {s for s in exported(sys.argv[3]) if re.match(r"^p?nccl", s)}
        for name in sorted(ref - ours):
            if not NOT_IMPLEMENTED.match(name):
                print(f"NVIDIA's {sys.argv[3]} exports {name}; libcoll's does not")
                bad = True
        print(f"{len(ref & ours)} of NVIDIA's {len(ref)} functions exported; "
              f"{len([n for n in ref - ours if NOT_IMPLEMENTED.match(n)])} not implemented (device API, ncclResetDebugInit)")
    print(f"{len(ours)} symbols exported, {len(want)} declared: {'FAILED' if bad else 'ok'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
