#!/usr/bin/env bash
# memviz as a user installs it: build the sdist and the wheel, check that the sdist builds the
# same wheel as the tree, install the wheel into a new venv outside the tree, and use it there
# with a new HOME: the sample store made and read through the public API, every command, the
# window opened offscreen on the sample, the user guide's pages read from the wheel, the desktop
# entry written and removed, the example plugin (tests/plugins/memviz-toy) installed beside it and
# used. Anything the wheel lacks (a package-data entry, a module) fails here, not on a user's machine.
#
#   bash .ci/wheel_smoke.sh            (PYTHON=python3.12 to use another interpreter)
# Needs PyPI (build, and memviz's dependencies: pip's cache makes a second run quick) and Qt's
# system libraries (.ci/run installs them). Prints the wheel's size and the first window's time.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/memviz-wheel.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
case "$WORK/" in "$ROOT"/*) echo "the work folder $WORK is inside the tree" >&2; exit 1 ;; esac
step() { printf '\n== %s\n' "$*"; }

step "build: sdist, the wheel from the sdist, and a wheel straight from the tree"
"$PY" -m venv "$WORK/tools"
# pip's output goes to a log (shown when it fails): a machine's pip configuration may warn on every package
quiet() { "$@" >"$WORK/pip.log" 2>&1 || { tail -40 "$WORK/pip.log"; return 1; }; }
quiet "$WORK/tools/bin/python" -m pip install build
"$WORK/tools/bin/python" -m build -o "$WORK/dist" "$ROOT" >"$WORK/build.log" 2>&1 ||
  { tail -40 "$WORK/build.log"; exit 1; }
"$WORK/tools/bin/python" -m build --wheel -o "$WORK/direct" "$ROOT" >>"$WORK/build.log" 2>&1 ||
  { tail -40 "$WORK/build.log"; exit 1; }
WHEEL="$(ls "$WORK"/dist/memviz-*.whl)"
"$WORK/tools/bin/python" - "$WHEEL" "$WORK"/direct/memviz-*.whl "$ROOT" <<'EOF'
import hashlib, sys, zipfile

def files(path):  # name -> sha256 of the content; RECORD lists exactly these hashes
    with zipfile.ZipFile(path) as z:
        return {n: hashlib.sha256(z.read(n)).hexdigest() for n in z.namelist() if not n.endswith("/RECORD")}

from_sdist, direct = files(sys.argv[1]), files(sys.argv[2])
if from_sdist != direct:
    only_a = sorted(set(from_sdist) - set(direct))
    only_b = sorted(set(direct) - set(from_sdist))
    differ = sorted(n for n in set(from_sdist) & set(direct) if from_sdist[n] != direct[n])
    sys.exit(f"the sdist builds another wheel than the tree: only from the sdist {only_a}, only from the tree {only_b}, "
             f"different content {differ}")
names = set(from_sdist)
import pathlib
pages = sorted(f"memviz/manual/{p.name}" for p in pathlib.Path(sys.argv[3], "memviz", "manual").glob("*.md"))
for need in ("memviz/icons/memviz.svg", "memviz/icons/memviz.png", "memviz/samples/assistant_text.py", "memviz/app/window.py",
             "memviz/manual/__init__.py", *pages):
    if need not in names:
        sys.exit(f"the wheel lacks {need}")
print(f"the sdist builds the same wheel as the tree: {len(names) + 1} files, "
      f"{__import__('os').path.getsize(sys.argv[1]) / 1e6:.2f} MB")
EOF

step "install the wheel into a new venv outside the tree"
"$PY" -m venv "$WORK/venv"
quiet "$WORK/venv/bin/python" -m pip install --upgrade pip
quiet "$WORK/venv/bin/python" -m pip install "$WHEEL"
BIN="$WORK/venv/bin"

# From here on: a new HOME, no memviz settings or folders inherited, the tree not on any path.
export HOME="$WORK/home"
mkdir -p "$HOME"
unset PYTHONPATH XDG_DATA_HOME XDG_CONFIG_HOME XDG_CACHE_HOME MEMVIZ_DATA_DIR MEMVIZ_CACHE_DIR VIRTUAL_ENV
export QT_QPA_PLATFORM=offscreen MEMVIZ_ROOT="$ROOT"
cd "$WORK"

step "memviz --version"
"$BIN/memviz" --version | tee "$WORK/version.txt"
grep -q "^memviz .*($WORK/venv/" "$WORK/version.txt" || { echo "memviz was not imported from the new venv" >&2; exit 1; }
grep -q "^sqlite-vec v" "$WORK/version.txt"

step "the sample, made on first use and read through the public API"
"$BIN/python" - <<'EOF'
import os, sys
import memviz
import memviz.store as ms
from memviz.desktop import ICON_PNG, ICON_SVG
from memviz.samples.bundled import user_sample
from memviz.tasks import Task

said = []
path = user_sample(Task(on_progress=lambda f, text: said.append(text)))
assert path.startswith(os.environ["HOME"]), path
assert any("embedding" in t for t in said), said  # the first run made it, with progress
with ms.open(path, read_only=True) as s:
    arrays = s.arrays()
    counts = s.counts()
assert len(arrays) == counts["total"] > 1000 and arrays.embedding.shape == (len(arrays), 256), arrays.embedding.shape
assert ICON_SVG.is_file() and ICON_PNG.stat().st_size > 1000
root = os.environ["MEMVIZ_ROOT"]
tree = sorted(m.__file__ for m in list(sys.modules.values())
              if getattr(m, "__file__", None) and os.path.abspath(m.__file__).startswith(root + os.sep))
assert not tree, f"modules read from the source tree: {tree[:5]}"
print(f"{path}: {counts['total']} memories, vectors {arrays.embedding.shape}")
EOF
SAMPLE="$HOME/.local/share/memviz/samples/assistant.db"

step "every command"
for c in stats check create import edit query reflect consolidate context diff clock copy index; do
  "$BIN/memviz" "$c" --help >/dev/null
done
"$BIN/memviz" stats "$SAMPLE" | tee "$WORK/stats.txt"
grep -q "integrity: ok" "$WORK/stats.txt"
"$BIN/memviz" check "$SAMPLE" >/dev/null
"$BIN/memviz" query "$SAMPLE" "When is the trip to Kyoto?" -k 5 | tee "$WORK/query.txt"
grep -qi "kyoto" "$WORK/query.txt"
"$BIN/memviz" query "$SAMPLE" "Kyoto" --preset hybrid -k 3 --json >/dev/null
"$BIN/memviz" clock "$SAMPLE" >/dev/null
"$BIN/memviz" context "$SAMPLE" --budget 500 --text >/dev/null
"$BIN/memviz" diff "$SAMPLE" --from 2025-03-01 --to 2025-04-01 >/dev/null
"$BIN/memviz" reflect "$SAMPLE" --status >/dev/null
"$BIN/memviz" consolidate "$SAMPLE" --dry-run >/dev/null
"$BIN/memviz" copy "$SAMPLE" "$WORK/copy.db" >/dev/null
ID="$("$BIN/python" -c "import memviz.store as ms, sys; print(ms.open(sys.argv[1]).arrays().ids[0])" "$WORK/copy.db")"
"$BIN/memviz" edit "$WORK/copy.db" importance 7 "$ID" >/dev/null
"$BIN/memviz" edit "$WORK/copy.db" history "$ID" | grep -q importance
printf '{"id": "a", "content": "The user likes green tea."}\n{"id": "b", "content": "The user lives in Lisbon."}\n' >"$WORK/notes.jsonl"
"$BIN/memviz" import jsonl "$WORK/notes.jsonl" -o "$WORK/notes.db" >/dev/null
"$BIN/memviz" create "$WORK/empty.db" >/dev/null
"$BIN/memviz" stats "$WORK/notes.db" | grep -q "memories: 2"

step "the window on the sample (offscreen), from a HOME where it was never made"
export HOME="$WORK/home2"
mkdir -p "$HOME"
MEMVIZ_STARTUP_REPORT="$("$BIN/python" -c 'import time; print(time.time())')" timeout 300 "$BIN/memviz" \
  | tee "$WORK/window.txt"
grep -Eq "^memviz: interactive after [0-9.]+ s \([0-9]+ memories" "$WORK/window.txt" &&
  test -s "$HOME/.local/share/memviz/samples/assistant.db" ||
  { echo "the window did not show the sample" >&2; exit 1; }

step "the user guide from the wheel: every page of the manual's navigation that it installs"
"$BIN/python" - <<'EOF'
from memviz import manual
from memviz.app.main import make_app

app = make_app()
from memviz.app.dialogs.help_dialogs import GuideDialog  # noqa: E402 - after the QApplication

assert manual.checkout() is None and manual.assets_dir() is None, manual.SOURCE_ROOT  # nothing of the tree
missing = [p.file for p in manual.pages() if p.path is None and p.file not in manual.ROOT_PAGES]
assert not missing, f"pages of the manual's navigation not installed: {missing}"
guide = GuideDialog()
for p in manual.pages():
    if p.path is not None:
        assert guide.show_page(p.file), p.file
        assert guide.browser.document().begin().text(), p.file  # its title, read from the installed file
print(f"{len(guide.titles())} pages: {', '.join(guide.titles())}")
EOF

step "the desktop entry"
mkdir -p "$HOME/.local/share"
"$BIN/memviz" --install-desktop-entry
grep -q "^Exec=$BIN/memviz %f" "$HOME/.local/share/applications/memviz.desktop"
test -s "$HOME/.local/share/icons/hicolor/256x256/apps/memviz.png"
"$BIN/memviz" --uninstall-desktop-entry
test ! -e "$HOME/.local/share/applications/memviz.desktop"

step "a plugin installed beside it: the example package, listed, its store opened and ranked"
cp -r "$ROOT/tests/plugins/memviz-toy" "$WORK/memviz-toy"  # built from a copy: the tree stays clean
quiet "$BIN/python" -m pip install --no-deps "$WORK/memviz-toy"
"$BIN/memviz" --version | tee "$WORK/version-plugins.txt"
test "$(grep -c 'from memviz-toy 0.1.0): OK' "$WORK/version-plugins.txt")" = 4
printf '{"toymem": 1, "records": [{"id": "r1", "text": "The user likes green tea.", "at": "2025-03-01T09:00:00Z"}]}\n' \
  >"$WORK/toy.json"
"$BIN/memviz" stats "$WORK/toy.json" | grep -q "memories: 1"
"$BIN/memviz" query "$WORK/toy.json" "green tea" --preset toy-recency | grep -q "^toy-recency: "

step "the wheel stands alone: $(basename "$WHEEL"), $(du -k "$WHEEL" | cut -f1) kB"
