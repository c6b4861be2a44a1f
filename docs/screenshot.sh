#!/bin/sh
# Regenerates docs/timeline.png, the timeline screenshot in the README:
# runs examples/trace.rs (which writes trace.json), embeds that JSON in a
# copy of docs/timeline.html (our own offline viewer) and has headless
# Chromium render it. Needs Chromium (Debian: apt-get install chromium); no
# network. Not part of CI.
#
#   docs/screenshot.sh                  # auto-picked 300 µs detail window
#   SPAN=500 docs/screenshot.sh         # a wider auto window
#   FROM=2400 TO=2700 docs/screenshot.sh   # an explicit window, in µs
#   OUT=/tmp/t.png docs/screenshot.sh   # write elsewhere
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/docs/timeline.png}
chromium=${CHROMIUM:-chromium}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The example writes trace.json to its working directory.
(cd "$work" && cargo run --quiet --release --manifest-path "$root/Cargo.toml" --example trace)

cp "$root/docs/timeline.html" "$work/timeline.html"
{
    printf 'window.TRACE_DATA = '
    cat "$work/trace.json"
    printf ';\n'
} >"$work/trace-data.js"

query="span=${SPAN:-300}"
if [ -n "${FROM:-}" ]; then query="$query&from=$FROM"; fi
if [ -n "${TO:-}" ]; then query="$query&to=$TO"; fi

"$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --hide-scrollbars --force-device-scale-factor=1 \
    --window-size="${SIZE:-1400,500}" --screenshot="$out" \
    "file://$work/timeline.html?$query" 2>"$work/chromium.log" || {
    cat "$work/chromium.log" >&2
    exit 1
}
echo "wrote $out"
