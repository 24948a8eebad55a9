#!/usr/bin/env python3
"""Prints the build outputs a selection of a build's tests runs.

usage: test-targets.py BUILD_DIR [ctest selection arguments...]

ctest picks the tests (-L, -LE, -R, ... as given).  Their definitions are
read from the build's CTestTestfile.cmake files, since ctest leaves out the
command of a test whose program is not built yet.  Every path under
BUILD_DIR in a selected test's definition (its command and arguments,
including a wrapper script's or those inside `sh -c '...'`, and its
properties, such as its environment) that the build knows how to make is
printed, one per line, relative to BUILD_DIR.  Building just these (with
their dependencies) lets a sanitizer build skip the benchmarks and tools
its tests never run (tools/run-tests.sh).

A selection that names no test, a test with no definition, or a test whose
program is a path in the build that the build does not make, is an error:
the run would otherwise fail later, or test nothing.
"""
import json
import os
import re
import subprocess
import sys

# add_test([=[NAME]=] "PROGRAM" ...) / set_tests_properties([=[NAME]=] ...),
# as CMake writes them.
DEFINITION = re.compile(r'^(add_test|set_tests_properties)\(\[(=*)\[(.*?)\]\2\]\s*(.*)$')
PROGRAM = re.compile(r'^"((?:[^"\\]|\\.)*)"')


def definitions(build):
    """{test name: [program or None, text of its add_test and properties]}"""
    tests = {}
    for root, _, files in os.walk(build):
        if "CTestTestfile.cmake" not in files:
            continue
        with open(os.path.join(root, "CTestTestfile.cmake"), encoding="utf-8") as f:
            for line in f:
                m = DEFINITION.match(line.strip())
                if not m:
                    continue
                entry = tests.setdefault(m.group(3), [None, ""])
                entry[1] += m.group(4) + "\n"
                if m.group(1) == "add_test":
                    program = PROGRAM.match(m.group(4))
                    entry[0] = program.group(1) if program else None
    return tests


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    listing = subprocess.run(
        ["ctest", "--test-dir", build, "--show-only=json-v1"] + sys.argv[2:],
        check=True, capture_output=True, text=True).stdout
    names = [t["name"] for t in json.loads(listing).get("tests", [])]
    if not names:
        sys.exit("test-targets: no test in %s matches %s" % (build, sys.argv[2:]))

    made = subprocess.run(["ninja", "-C", build, "-t", "targets", "all"],
                          check=True, capture_output=True, text=True).stdout
    outputs = {line.rsplit(": ", 1)[0] for line in made.splitlines()}

    # A path ends where a shell word would: at a space, a quote or a
    # backslash (CMake's escape).
    roots = sorted({build, os.path.realpath(build)}, key=len, reverse=True)
    under_build = re.compile("(?:%s)/([^\\s'\"\\\\]+)" % "|".join(map(re.escape, roots)))
    defined = definitions(build)
    wanted = set()
    for name in names:
        if name not in defined:
            sys.exit("test-targets: no definition of %s in %s" % (name, build))
        program, text = defined[name]
        # The program must be made here, unless it is a system program or
        # a script from the source tree (sh, a .sh wrapper).
        inside = under_build.fullmatch(program or "")
        if inside and inside.group(1) not in outputs:
            sys.exit("test-targets: %s runs %s, which this build does not make" % (name, program))
        wanted |= {m for m in under_build.findall(text) if m in outputs}
    print("\n".join(sorted(wanted)))


if __name__ == "__main__":
    main()
