#!/usr/bin/env python3
"""Prints the build outputs a selection of a build's tests runs.

usage: test-targets.py BUILD_DIR [ctest selection arguments...]

Every path under BUILD_DIR on a selected test's command line, its
arguments included (a wrapper script's, or inside `sh -c '...'`), or in its
properties (its environment), that the
build knows how to make, one per line, relative to BUILD_DIR.  Building
just these (with their dependencies) lets a sanitizer build skip the
benchmarks and tools its tests never run (tools/run-tests.sh).

A selection that names no test, or a test whose program the build does not
make, is an error: the run would otherwise fail later, or test nothing.
"""
import json
import os
import re
import subprocess
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    listing = subprocess.run(
        ["ctest", "--test-dir", build, "--show-only=json-v1"] + sys.argv[2:],
        check=True, capture_output=True, text=True).stdout
    tests = json.loads(listing).get("tests", [])
    if not tests:
        sys.exit("test-targets: no test in %s matches %s" % (build, sys.argv[2:]))

    made = subprocess.run(["ninja", "-C", build, "-t", "targets", "all"],
                          check=True, capture_output=True, text=True).stdout
    outputs = {line.rsplit(": ", 1)[0] for line in made.splitlines()}

    # A path ends where a shell word would: at a space or a quote.
    roots = sorted({build, os.path.realpath(build)}, key=len, reverse=True)
    under_build = re.compile("(?:%s)/([^\\s'\"]+)" % "|".join(map(re.escape, roots)))
    wanted = set()
    for test in tests:
        command = test.get("command") or []
        if not command:
            sys.exit("test-targets: %s has no command (its program is not a target here?)"
                     % test["name"])
        # Its environment too: a test may name a program there.
        words = list(command)
        for prop in test.get("properties", []):
            value = prop.get("value")
            words += value if isinstance(value, list) else [str(value)]
        found = {m for word in words for m in under_build.findall(word) if m in outputs}
        # The program itself must be one of them, unless it is a system
        # program or a script from the source tree (sh, a .sh wrapper).
        program = under_build.fullmatch(command[0])
        if program and program.group(1) not in outputs:
            sys.exit("test-targets: %s runs %s, which this build does not make"
                     % (test["name"], command[0]))
        wanted |= found
    print("\n".join(sorted(wanted)))


if __name__ == "__main__":
    main()
