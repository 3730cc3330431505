#!/usr/bin/env bash
# Set up everything wholeloop needs on this machine; safe to run again (each step checks first).
#   1. a virtual environment in .venv with wholeloop, its test dependencies and the extras the tests use
#      (ray, inspect: the Inspect AI export is read back by inspect_ai; pandas: the Python API's table)
#   2. a Docker engine: installed (Debian/Ubuntu: docker.io) when missing, started when stopped
#   3. the offline base image, built with debootstrap when it is missing and cannot be pulled
#   (and what the tests need: a C compiler with a static libc, chromium, PostgreSQL's server)
# Environment: WHOLELOOP_PYTHON (default python3), WHOLELOOP_SKIP_DOCKER=1 to skip 2 and 3.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

# --- 1. Python ---------------------------------------------------------------------------
PY="${WHOLELOOP_PYTHON:-python3}"
if [ -x .venv/bin/python ] && ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
  # a .venv whose creation was interrupted (no pip in it): start it again rather than fail on it
  say "recreating .venv (the one here has no pip: its creation was interrupted)"
  rm -rf .venv
fi
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import harness, sandbox, pytest" 2>/dev/null \
   || [ pyproject.toml -nt .venv/.wholeloop-installed ]; then
  say "installing wholeloop and its dependencies into .venv"
  log=$(mktemp)
  if ! { .venv/bin/python -m pip install -q --upgrade pip && .venv/bin/python -m pip install -q -e '.[test,ray,inspect,pandas]'; } >"$log" 2>&1; then
    tail -30 "$log"; say "pip install failed (full log: $log)"; exit 1
  fi
  rm -f "$log"
  touch .venv/.wholeloop-installed
fi

[ "${WHOLELOOP_SKIP_DOCKER:-0}" = 1 ] && { say "skipping Docker (WHOLELOOP_SKIP_DOCKER=1)"; exit 0; }

# --- 2. Docker engine ------------------------------------------------------------------
apt_install() {
  if ! command -v apt-get >/dev/null; then
    say "please install: $* (no apt-get here)"; exit 1
  fi
  if [ ! -f /var/lib/apt/lists/.wholeloop-updated ] || [ -z "$(ls /var/lib/apt/lists 2>/dev/null | head -1)" ]; then
    $SUDO apt-get update -qq && $SUDO touch /var/lib/apt/lists/.wholeloop-updated
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

# a C compiler with a static libc: wholeloop's in-container helpers are small static binaries
if ! printf 'int main(void){return 0;}\n' | cc -static -x c - -o /dev/null 2>/dev/null; then
  say "installing a C compiler with a static libc (gcc, libc6-dev) for wholeloop's container helpers"
  apt_install gcc libc6-dev
fi

# PostgreSQL's server binaries: the run history tests start their own server from them (initdb + pg_ctl
# in a temporary folder, as the postgres user); the package's own cluster is not used
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null; then
  say "installing PostgreSQL (the run history tests start a server of their own)"
  apt_install postgresql
fi

# node and npm: external agents from npm (Claude Code, Codex CLI) are installed with them (in a
# build container; neither CLI needs node at run time)
command -v npm >/dev/null || { say "installing node and npm (to install npm-based agent CLIs)"; apt_install nodejs npm; }

# headless chromium: tests/test_html_report.py opens the HTML report in it (CI runs that test)
command -v chromium >/dev/null || { say "installing chromium (headless browser for the HTML report test)"; apt_install chromium; }

if ! docker info >/dev/null 2>&1; then
  if ! command -v dockerd >/dev/null; then
    say "installing the Docker engine (docker.io)"
    apt_install docker.io
  fi
  if ! docker info >/dev/null 2>&1; then
    say "starting dockerd (log: /var/log/wholeloop-dockerd.log)"
    if command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
      $SUDO systemctl start docker
    else
      $SUDO sh -c 'setsid nohup dockerd >/var/log/wholeloop-dockerd.log 2>&1 < /dev/null &'
    fi
    for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
    docker info >/dev/null 2>&1 || { say "dockerd did not come up; see /var/log/wholeloop-dockerd.log"; exit 1; }
  fi
fi
say "Docker engine $(docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})')"

# --- 3. base image ---------------------------------------------------------------------
BASE="wholeloop/base:bookworm"
if ! docker image inspect "$BASE" >/dev/null 2>&1; then
  command -v debootstrap >/dev/null || apt_install debootstrap
  say "building the offline base image $BASE (debootstrap, about a minute)"
  .venv/bin/wholeloop images bootstrap
fi
say "ready: $(.venv/bin/wholeloop doctor | tail -1)"
