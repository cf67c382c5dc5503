#!/bin/sh
# A shell script that starts the engine WITHOUT exec: the shell stays the parent and the
# engine a child holding the pipes, the set-up that used to freeze the arena in close().
"${PYTHON:-python3}" "$(dirname "$0")/deaf.py"
echo "deaf engine ended" >&2
