# Sourced by the scripts that run Python against quester (scripts/openenv-client-test.sh,
# scripts/python-package-test.sh, bench/python_envs.sh): one way to make their venvs.

# py_venv VENV [REQUIREMENTS]: creates the venv VENV if it has no python, and installs
# REQUIREMENTS (a pip requirements file) into it when that file changed since the last install
# (its hash is kept in VENV/.requirements.sha256), so an edited pin takes effect without
# deleting the venv.
py_venv() {
  local venv=$1 requirements=${2:-} sum
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" || {
      echo "python3 -m venv failed: on Debian/Ubuntu install python3-venv" >&2
      return 1
    }
  fi
  [ -n "$requirements" ] || return 0
  sum=$(sha256sum "$requirements" | cut -d' ' -f1)
  if [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$sum" ]; then
    "$venv/bin/pip" install -q -r "$requirements"
    echo "$sum" >"$venv/.requirements.sha256"
  fi
}

# quester_target: the absolute cargo target directory ($CARGO_TARGET_DIR, else target/),
# created if missing.
quester_target() {
  local target=${CARGO_TARGET_DIR:-target}
  mkdir -p "$target"
  realpath "$target"
}
