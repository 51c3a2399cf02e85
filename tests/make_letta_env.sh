#!/usr/bin/env bash
# Letta's own environment for its tests (tests/letta_db.py runs tests/letta_schema.py in it):
# the letta package, pinned in tests/letta_requirements.txt, beside memviz's environment rather
# than in it (it holds openai, protobuf and websockets back). .ci/run runs this; so can you:
#   bash tests/make_letta_env.sh [DIR]        (DIR: .venv-letta in the checkout)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-.venv-letta}"
python3 -m venv "$dir"
"$dir/bin/python" -m pip install -q --upgrade pip  # the pip venv brings fails to resolve letta's dependencies
"$dir/bin/pip" install -q -r tests/letta_requirements.txt
# a smoke run: its whole output is read (a `| head -1` closed the pipe under a later write,
# and pipefail made the setup fail at random)
schema="$("$dir/bin/python" tests/letta_schema.py)"
echo "${schema%%$'\n'*}"
