# Sourced by scripts/demo (EXTRAS=demo: only what the demo needs) and scripts/test (EXTRAS=dev:
# the whole development set): make .venv once, and install again when pyproject.toml changes.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
EXTRAS=${EXTRAS:?set EXTRAS to the extra to install, such as demo or dev}
hash=$(sha256sum pyproject.toml | cut -c1-16)
stamp=.venv/.installed-$EXTRAS-$hash
# The dev set holds the demo's and the docs', so a .venv made for the tests runs both as it is.
if [ ! -f "$stamp" ] && [ ! -f ".venv/.installed-dev-$hash" ]; then
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
  # pip is quiet: without this line a first install of minutes reads as a hang.
  echo "installing .[$EXTRAS] into .venv (minutes the first time; once per change of pyproject.toml)" >&2
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".[$EXTRAS]"
  rm -f .venv/.installed-"$EXTRAS"-*
  touch "$stamp"
fi
export PATH="$PWD/.venv/bin:$PATH"
