#!/usr/bin/env bash
# Reproduces docs/offline.md's GPOPE tables (section "GPOPE (dprl offline gtd2)"):
# MSPBE vs number of trajectories on the chain for GPOPE and DP-LSW at the
# same (epsilon, delta), and mountain car with a 5th-order Fourier basis on-
# and off-policy. Every number comes from the dprl commands below.
#
#   scripts/gpope-reproduce.sh [OUTDIR]     (about 2 minutes on one core)
#
# GPOPE's clip, step size, iterations and batch were tuned on logs generated
# with other seeds (public data standing in for the private logs, as in the
# paper); the tuning grid is in docs/offline.md. Every private run is charged to a
# throwaway ledger in OUTDIR (runs on the same log would otherwise compose).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d)}
mkdir -p "$OUT"
go build -o "$OUT/dprl" ./cmd/dprl
D="nice $OUT/dprl --log-level error"
EPS=1 DELTA=1e-5 SEEDS="1 2 3 4 5"

run() { # run NAME ARGS...: one gtd2 run, its JSON appended to OUT/results.jsonl
  local name=$1; shift
  rm -rf "$OUT/ledger"
  $D offline gtd2 --ledger "$OUT/ledger" --dataset-delta 1e-4 --json "$@" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); r["run"]=sys.argv[1]; print(json.dumps(r))' "$name" >>"$OUT/results.jsonl"
}
: >"$OUT/results.jsonl"

# Chain: 20 states, uniform target = stay or advance with probability 1/2
# (the paper's chain), on-policy, tabular features, gamma 0.9.
declare -A GP=([100]="--clip 0.01 --step-size 0.25 --iters 1000 --batch 10"
  [1000]="--clip 0.005 --step-size 4 --iters 1000 --batch 100"
  [10000]="--clip 0.01 --step-size 1 --iters 5000 --batch 100")
for n in 100 1000 10000; do
  for s in $SEEDS; do
    data="$OUT/chain-$n-$s.jsonl"
    $D sims generate --env chain --behavior random --episodes "$n" --seed "$s" --out "$data" --force >/dev/null
    common=(--data "$data" --env chain --target uniform --features tabular --gamma 0.9)
    run "chain n=$n gpope" "${common[@]}" --epsilon $EPS --delta $DELTA --seed "$s" ${GP[$n]}
    run "chain n=$n dp-lsw" "${common[@]}" --method dp-lsw --epsilon $EPS --delta $DELTA --seed "$s"
    run "chain n=$n lstd (non-private)" "${common[@]}" --method lstd --non-private
  done
done
# The committed plot: one GPOPE run, n = 1000, seed 1.
$D offline gtd2 --data "$OUT/chain-1000-1.jsonl" --env chain --target uniform --features tabular --epsilon $EPS --delta $DELTA \
  --seed 1 ${GP[1000]} --ledger "$OUT/plot-ledger" --plot "$OUT/gpope-chain-mspbe.png" >/dev/null

# Mountain car: Fourier order 5 (36 features), gamma 0.9, 1000 episodes. The
# MSPBE is measured on a public evaluation log from the same behaviour.
MC="--clip 0.3 --step-size 0.5 --iters 1000 --batch 100"
$D sims generate --env mountaincar --behavior epsilon-greedy:0.1 --episodes 1000 --seed 900 --out "$OUT/mc-eval-on.jsonl" --force >/dev/null
$D sims generate --env mountaincar --behavior epsilon-greedy:0.3 --episodes 1000 --seed 901 --out "$OUT/mc-eval-off.jsonl" --force >/dev/null
for s in 1 2 3; do
  on="$OUT/mc-on-$s.jsonl" off="$OUT/mc-off-$s.jsonl"
  $D sims generate --env mountaincar --behavior epsilon-greedy:0.1 --episodes 1000 --seed "$s" --out "$on" --force >/dev/null
  $D sims generate --env mountaincar --behavior epsilon-greedy:0.3 --episodes 1000 --seed "$s" --out "$off" --force >/dev/null
  con=(--data "$on" --env mountaincar --target epsilon-greedy:0.1 --features fourier:5 --gamma 0.9 --eval-data "$OUT/mc-eval-on.jsonl")
  run "mc on-policy gpope" "${con[@]}" --epsilon $EPS --delta $DELTA --seed "$s" $MC
  run "mc on-policy dp-lsw" "${con[@]}" --method dp-lsw --epsilon $EPS --delta $DELTA --seed "$s"
  run "mc on-policy lstd (non-private)" "${con[@]}" --method lstd --non-private
  coff=(--data "$off" --env mountaincar --target uniform --features fourier:5 --gamma 0.9 --eval-data "$OUT/mc-eval-off.jsonl")
  run "mc off-policy gpope" "${coff[@]}" --epsilon $EPS --delta $DELTA --seed "$s" $MC
  run "mc off-policy wis-lstd (non-private)" "${coff[@]}" --method wis-lstd --non-private
done

python3 - "$OUT/results.jsonl" <<'PY'
import json, sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    rows.setdefault(r["run"], []).append(r)
print("| run | runs | MSPBE mean ± std | value mean ± std | epsilon |")
print("|---|---|---|---|---|")
for name, rs in rows.items():
    m = [r["mspbe"] for r in rs]; v = [r["value"] for r in rs]
    sd = lambda x: st.stdev(x) if len(x) > 1 else 0.0
    eps = "-" if not rs[0]["private"] else "%.3g" % max(r["epsilon"] for r in rs)
    extra = " (true %.4g)" % rs[0]["true_value"] if rs[0].get("true_value") is not None else ""
    print("| %s | %d | %.3g ± %.2g | %.4g ± %.2g%s | %s |" % (name, len(rs), st.mean(m), sd(m), st.mean(v), sd(v), extra, eps))
PY
echo "results: $OUT/results.jsonl, plot: $OUT/gpope-chain-mspbe.png"
