#!/usr/bin/env bash
# Runs Tartan's benchmark suite (tartan bench --suite) and the same models in
# PyTorch (bench/torch_suite.py) alternately, R rounds on this machine, and
# prints the table of medians: Tartan ms/step, PyTorch ms/step and their
# ratio per entry, and the geometric mean over the models.
#
# Settings, from the environment:
#   TARTAN       the tartan binary; without it, one is built with go (needs
#                Go: on a machine without Go, copy a binary and set TARTAN)
#   PYTHON       a Python with torch (default python3)
#   R            rounds (default 3); odd rounds run Tartan first, even ones
#                PyTorch first
#   THREADS      CPU threads of both sides (default: the CPUs this shell may
#                use, as nproc counts them)
#   CPUS         pin both sides to these CPUs with taskset, e.g. 0,1
#   DEVICE       cpu (default) or cuda: PyTorch's device. Tartan runs on
#                the CPU for cpu; for cuda on TARTAN_DEVICE, else its
#                default device (the best GPU it finds)
#   TF32         PyTorch's TF32 on CUDA: off (default, float32 exact as
#                Tartan's default), on, or default (PyTorch's own)
#   FRAGMENTS    1 to run the kernel fragments too
#   ONLY         entries to run, comma-separated
#   MAX_SECONDS  per entry, per round (default 3); STEPS at most (default 100)
#   OUT          directory for the JSON reports (default: a new one in /tmp)
#
# Tartan compiles against empty caches every round (compile seconds are
# cold); the NVIDIA and PoCL driver caches are turned off for it too.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
R=${R:-3}
THREADS=${THREADS:-$(nproc)}
DEVICE=${DEVICE:-cpu}
TF32=${TF32:-off}
MAX_SECONDS=${MAX_SECONDS:-3}
STEPS=${STEPS:-100}
PYTHON=${PYTHON:-python3}
OUT=${OUT:-$(mktemp -d /tmp/tartan-suite.XXXXXX)}
mkdir -p "$OUT"

case $DEVICE in
cpu | cuda) ;;
*) echo "run_suite.sh: DEVICE=$DEVICE: want cpu or cuda" >&2; exit 2 ;;
esac
case $R in
'' | *[!0-9]* | 0) echo "run_suite.sh: R=$R: want a positive number of rounds" >&2; exit 2 ;;
esac

if [ -z "${TARTAN:-}" ]; then
	if ! command -v go >/dev/null; then
		echo "run_suite.sh: no Go here: build tartan elsewhere (go build ./cmd/tartan) and set TARTAN=/path/to/tartan" >&2
		exit 2
	fi
	TARTAN=$OUT/tartan
	(cd "$here/.." && go build -o "$TARTAN" ./cmd/tartan)
fi

pin=()
if [ -n "${CPUS:-}" ]; then
	pin=(taskset -c "$CPUS")
fi
select_args=()
if [ "${FRAGMENTS:-0}" = 1 ]; then
	select_args+=(--fragments)
fi
if [ -n "${ONLY:-}" ]; then
	select_args+=(--only "$ONLY")
fi
tartan_dev=()
if [ "$DEVICE" = cpu ]; then
	tartan_dev=(--device cpu)
fi

tartan_round() {
	if ! CUDA_CACHE_DISABLE=1 POCL_KERNEL_CACHE=0 ${pin[@]+"${pin[@]}"} "$TARTAN" bench --suite ${tartan_dev[@]+"${tartan_dev[@]}"} \
		--threads "$THREADS" --steps "$STEPS" --max-seconds "$MAX_SECONDS" ${select_args[@]+"${select_args[@]}"} \
		--json "$OUT/tartan-$1.json" >"$OUT/tartan-$1.txt"; then
		echo "run_suite.sh: round $1: tartan reported failures (see $OUT/tartan-$1.txt)" >&2
	fi
}

torch_round() {
	if ! ${pin[@]+"${pin[@]}"} "$PYTHON" "$here/torch_suite.py" --device "$DEVICE" --threads "$THREADS" --tf32 "$TF32" \
		--steps "$STEPS" --max-seconds "$MAX_SECONDS" ${select_args[@]+"${select_args[@]}"} \
		--json "$OUT/torch-$1.json" >"$OUT/torch-$1.txt"; then
		echo "run_suite.sh: round $1: torch_suite.py failed (see $OUT/torch-$1.txt)" >&2
	fi
}

for ((i = 1; i <= R; i++)); do
	echo "round $i of $R" >&2
	if ((i % 2)); then
		tartan_round "$i"
		torch_round "$i"
	else
		torch_round "$i"
		tartan_round "$i"
	fi
done

join() {
	local IFS=,
	echo "$*"
}
shopt -s nullglob
ours=("$OUT"/tartan-*.json)
theirs=("$OUT"/torch-*.json)
if [ ${#ours[@]} -eq 0 ] || [ ${#theirs[@]} -eq 0 ]; then
	echo "run_suite.sh: no reports from one side; see $OUT" >&2
	exit 1
fi
echo "medians over $R rounds (reports in $OUT):"
"$TARTAN" bench --suite --from "$(join "${ours[@]}")" --peer "$(join "${theirs[@]}")"
