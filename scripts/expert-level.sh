#!/usr/bin/env bash
# Reproduces docs/offline.md's expert-level table and figure (Sharma et al.,
# "Preserving Expert-Level Privacy in Offline RL", Figure 3 setting) on one
# simulator: M = 3000 experts (dprl sims experts, 3 trajectories each),
# delta = 1/M, clip 1 (the default), batch 128, 10,000 steps, 2 x 64 networks; for each
# epsilon, expert-level DP-SGD alone on the whole log and, at 7.5 and 10,
# the SVT release (eps1 = 3 eps/4, delta1 = 9 delta/10, T = 20 or 25 queries)
# followed by selective DP-SGD on its outputs (eps2 = eps/4, delta2 =
# delta/10); 3 seeds each, and the non-private learner as the reference.
#
#   scripts/expert-level.sh ENV OUTDIR      ENV: cartpole or acrobot
#
# ALGOS (default "cql bcq"), SEEDS ("1 2 3"), EPS ("5 7.5 10"), HIDDEN
# ("64,64"), STEPS (10000) and JOBS (2) override the settings. The log and
# experts are generated into OUTDIR unless present (10 minutes on 2 cores).
# Every private run has its own ledger with the cap (eps, 1/M): an
# independent experiment; a selective run's ledger also holds its release.
set -euo pipefail
cd "$(dirname "$0")/.."
ENV=${1:?ENV: cartpole or acrobot}
OUT=${2:?OUTDIR}
ALGOS=${ALGOS:-cql bcq}
SEEDS=${SEEDS:-1 2 3}
EPS=${EPS:-5 7.5 10}
HIDDEN=${HIDDEN:-64,64}
STEPS=${STEPS:-10000}
JOBS=${JOBS:-2}
M=3000
mkdir -p "$OUT/runs" "$OUT/ledgers" "$OUT/sets"
go build -o "$OUT/dprl" ./cmd/dprl
D="$OUT/dprl"
cd "$OUT"
[ -s "$ENV.jsonl" ] || $D sims experts --env "$ENV" --m $M --trajectories 3 --bases 30 --users 3000 \
	--finetune-users 300 --out-dir "$ENV-experts" --log "$ENV.jsonl" --seed 1 --json --log-level error >"$ENV-gen.json"
delta=$(awk "BEGIN{printf \"%.15g\", 1/$M}")
d1=$(awk "BEGIN{printf \"%.15g\", 0.9/$M}")
d2=$(awk "BEGIN{printf \"%.15g\", 0.0999999/$M}")
common="--env $ENV --hidden $HIDDEN --steps $STEPS --batch 128 --eval-every 1000 --eval-episodes 10 --json --log-level error"
# p of the selective runs: the paper's Table 3 (CartPole) for CQL and BCQ.
p_of() { case "$1/$2" in cql/10) echo 0.8 ;; cql/*) echo 0.9 ;; *) echo 0.5 ;; esac; }
queries_of() { case "$1" in 10) echo 25 ;; *) echo 20 ;; esac; }
jobs=()
for a in $ALGOS; do for s in $SEEDS; do
	jobs+=("$ENV-$a-np-s$s|$D offline learn $common --algo $a --data $ENV.jsonl --non-private --seed $s")
	for e in $EPS; do
		jobs+=("$ENV-$a-dpsgd-e$e-s$s|$D offline learn $common --algo $a --data $ENV.jsonl --experts $M --epsilon $e --delta $delta --seed $s --ledger ledgers/$ENV-$a-dpsgd-e$e-s$s --dataset-epsilon $e --dataset-delta $delta")
	done
done; done
# The releases (one per epsilon and seed, shared by the learners: each
# learner's run is charged to its own copy of the release's ledger).
for e in $EPS; do
	[ "$e" = 5 ] && continue # the paper skips the release at epsilon 5 (App. B.3)
	e1=$(awk "BEGIN{printf \"%.15g\", 3*$e/4}")
	for s in $SEEDS; do
		name=$ENV-svt-e$e-s$s
		[ -s "sets/$name.json" ] || $D offline svt --data $ENV.jsonl --experts $ENV-experts --epsilon "$e1" --delta "$d1" --pmin 0.02 \
			--queries "$(queries_of "$e")" --max-len 500 --out-stable "sets/$name-stable.jsonl" --out-unstable "sets/$name-unstable.jsonl" --force \
			--ledger "ledgers/$name" --dataset-epsilon "$e" --dataset-delta "$delta" --seed "$s" --json --log-level error >"sets/$name.json"
		for a in $ALGOS; do
			run=$ENV-$a-selective-e$e-s$s
			# A fresh copy of the release's ledger, unless the run is done
			# (its ledger then holds its own entry).
			[ -s "runs/$run.json" ] || { rm -rf "ledgers/$run" && cp -r "ledgers/$name" "ledgers/$run"; }
			e2=$(awk "BEGIN{printf \"%.15g\", $e/4}")
			jobs+=("$run|$D offline learn $common --algo $a --stable sets/$name-stable.jsonl --unstable sets/$name-unstable.jsonl --p $(p_of "$a" "$e") --experts $M --epsilon $e2 --delta $d2 --seed $s --ledger ledgers/$run")
		done
	done
done
printf '%s\n' "${jobs[@]}" | xargs -P "$JOBS" -I{} bash -c 'name=${1%%|*}; cmd=${1#*|}; [ -s runs/$name.json ] || { $cmd > runs/$name.json.tmp && mv runs/$name.json.tmp runs/$name.json; } || echo "FAILED: $name" >&2' _ {}
$D plot learn --out "expert-level-$ENV.png" runs/"$ENV"-*.json
echo "results in $OUT"
