#!/usr/bin/env bash
# The official MCP conformance suite (client scenarios) against conformance/mcp/client.py, which
# drives our at.mcp.http source. Runs the requirement sets of 2026-07-28 and 2025-11-25 and the
# 2020-12 schema preservation scenario, each against expected-failures.yml, and prints a summary.
# Then the server scenarios of content and progress (tools-call-image, -audio,
# -embedded-resource, -mixed-content, -with-progress) at 2025-11-25 and 2026-07-28 against our MCP
# front (conformance/mcp/front.py: at.adapters.mcp_server over at.mcp.http over an SDK server),
# and the front proxying the reference server server-everything (tests/adapters/test_front_media.py).
# Exits non-zero when a scenario outside the baseline fails, or a baseline entry is stale.
#
# Usage: conformance/mcp/run.sh            (from anywhere; offline once installed)
# Env:   CONFORMANCE_PYTHON  the interpreter that has amends_toolkit (default: <repo>/.venv/bin/python,
#                            which scripts/test makes)
#        CONFORMANCE_PREFIX  where Node 22 and the suite are installed (default: <repo>/.conformance/mcp)
#        CONFORMANCE_OUT     where results are written (default: $CONFORMANCE_PREFIX/results)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
prefix="${CONFORMANCE_PREFIX:-$root/.conformance/mcp}"
out="${CONFORMANCE_OUT:-$prefix/results}"
python="${CONFORMANCE_PYTHON:-$root/.venv/bin/python}"
if [ ! -x "$python" ]; then
  echo "run.sh: no $python; run scripts/test once (it makes .venv) or set CONFORMANCE_PYTHON" >&2
  exit 2
fi

case "$root$python" in
  *" "*) echo "run.sh: the suite splits its --command on spaces; move the repo to a path without them" >&2; exit 2 ;;
esac

case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "run.sh: no Node 22 package pinned for $(uname -m)" >&2; exit 2 ;;
esac

# Install the pinned suite and Node 22 (npm ci from the committed lock) unless already there.
# The stamp is written only after a whole install, so an interrupted one is done again.
mkdir -p "$prefix"
if ! cmp -s "$here/package-lock.json" "$prefix/.installed.lock"; then
  rm -f "$prefix/.installed.lock"
  cp "$here/package.json" "$here/package-lock.json" "$prefix/"
  (cd "$prefix" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$here/package-lock.json" "$prefix/.installed.lock"
fi
node="$prefix/node_modules/node-linux-$arch/bin/node"
suite="$prefix/node_modules/@modelcontextprotocol/conformance/dist/index.js"
"$node" --version >/dev/null

labels=(2026-07-28 2025-11-25 2026-07-28-preservation server-2025-11-25 server-2026-07-28)
mkdir -p "$out"
for label in "${labels[@]}"; do rm -rf "${out:?}/$label" "${out:?}/$label.log"; done
rm -f "$out/exit-codes"
command="$python $here/client.py"
baseline="$here/expected-failures.yml"
status=0

run() {  # run <label> <suite arguments...>
  local label="$1"
  shift
  echo "=== conformance: $label ==="
  # Every scenario of a requirement set starts its client at once: on a small, busy machine
  # the suite's default 30 s per client is too short to be a verdict.
  if "$node" "$suite" client --command "$command" --expected-failures "$baseline" \
      --timeout 90000 -o "$out/$label" "$@" >"$out/$label.log" 2>&1; then
    echo "$label: ok" >>"$out/exit-codes"
  else
    echo "$label: FAILED" >>"$out/exit-codes"
    status=1
    tail -n 40 "$out/$label.log"
  fi
}

run 2026-07-28 --requirements 2026-07-28
run 2025-11-25 --requirements 2025-11-25
run 2026-07-28-preservation --scenario json-schema-2020-12-preservation --spec-version 2026-07-28

# The server scenarios of content and progress, against the front; the front's own URL is the
# first line it prints.
server_scenarios=(tools-call-image tools-call-audio tools-call-embedded-resource
  tools-call-mixed-content tools-call-with-progress)
"$python" "$here/front.py" media >"$out/front.url" 2>"$out/front.log" &
front_pid=$!
trap 'kill "$front_pid" 2>/dev/null || true' EXIT
for _ in $(seq 300); do grep -q '^URL ' "$out/front.url" 2>/dev/null && break; sleep 0.2; done
url="$(sed -n 's/^URL //p' "$out/front.url")"
if [ -z "$url" ]; then
  echo "run.sh: the front did not start"; tail -n 40 "$out/front.log"; status=1
else
  for version in 2025-11-25 2026-07-28; do
    label="server-$version"
    echo "=== conformance: $label ==="
    verdict=ok
    for scenario in "${server_scenarios[@]}"; do
      "$node" "$suite" server --url "$url" --scenario "$scenario" --spec-version "$version" \
        -o "$out/$label" >>"$out/$label.log" 2>&1 || verdict=FAILED
    done
    echo "$label: $verdict" >>"$out/exit-codes"
    if [ "$verdict" != ok ]; then status=1; tail -n 40 "$out/$label.log"; fi
  done
fi
kill "$front_pid" 2>/dev/null || true
wait "$front_pid" 2>/dev/null || true

echo "=== the front over server-everything ==="
if ! CONFORMANCE_PREFIX="$prefix" AMENDS_REQUIRE_EVERYTHING=1 "$python" -m pytest -q \
    -p no:cacheprovider "$root/tests/adapters/test_front_media.py" -k server_everything; then
  status=1
fi

"$python" "$here/summary.py" "$out" "$baseline" \
  "$prefix/node_modules/@modelcontextprotocol/conformance/requirements" || status=1
exit "$status"
