#!/usr/bin/env bash
# The test suite's wall time, as the README states it (issue 31, item 5): a fresh clone of
# this checkout, then the README's test command, timed whole (venv, pip install, pytest):
#
#   benchmarks/test_suite_time.sh           # the developer command (tests marked slow left out)
#   benchmarks/test_suite_time.sh --full    # the full suite, as .ci/run runs it
#                                           # (GPUMEM_TEST_SLOW=1 GPUMEM_REQUIRE_BROWSER=1)
#
# Prints pytest's last lines, the wall time and the machine's load average before and after
# (other jobs on the machine slow it down: say under what load a figure was measured). The
# clone is made from the committed state (HEAD), in a temporary folder removed at the end
# (KEEP=1 keeps it). Never asserted in tests: machines are noisy.
set -euo pipefail
full=0
[ "${1:-}" = "--full" ] && full=1
repo="$(cd "$(dirname "$0")/.." && pwd)"
dir="$(mktemp -d "${TMPDIR:-/tmp}/gpumem-suite-time.XXXXXX")"
[ "${KEEP:-0}" = "1" ] || trap 'rm -rf "$dir"' EXIT
git clone -q "$repo" "$dir/gpumem"
cd "$dir/gpumem"
env_=(env -u GPUMEM_TEST_SLOW -u GPUMEM_REQUIRE_BROWSER)
[ "$full" = "1" ] && env_=(env GPUMEM_TEST_SLOW=1 GPUMEM_REQUIRE_BROWSER=1)
echo "commit $(git rev-parse --short HEAD), $(nproc) CPUs, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
set +e
# the README's test command, exactly
"${env_[@]}" bash -c 'python3 -m venv .venv && .venv/bin/pip install -q -r requirements-test.txt && .venv/bin/python -m pytest -q -n auto' > "$dir/log" 2>&1
rc=$?
set -e
end=$(date +%s)
tail -n 4 "$dir/log"
echo "exit $rc; wall $((end - start)) s ($(( (end - start) / 60 )) min $(( (end - start) % 60 )) s)" \
     "$([ "$full" = 1 ] && echo "full suite" || echo "developer command");" \
     "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
