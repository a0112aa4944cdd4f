#!/usr/bin/env bash
# Recommendation (--env recsys) at per-user epsilon 5 with the profile's
# defaults, on seeds nobody tuned on (docs/train.md, "Recommendation"):
#   train: dprl train --algo dppg --epsilon 5, 10 seeds from 201, the final
#          policy (the moving average of the releases) on 500 episodes each;
#   ppo:   the non-private baseline at its defaults, the same seeds;
#   agent: the DP agent over NATS (dprl demo --user-epsilon 5, 80,000 users,
#          each a new user as in process, --flush-timeout 1m so that every
#          release holds K whole sessions), its last version exported from
#          the ledger and run on 500 fresh episodes (dprl sims generate
#          --behavior policy:FILE, evaluation seed 1000+S).
# Each prints one line per seed: mean return, its standard error and, for the
# agent, the per-user epsilon its ledger reports.
#
#   scripts/recsys-seeds.sh OUTDIR train|ppo|agent [SEEDS...]
#
# SEEDS default to 201-210; USERS (default 80000) sets the agent's users; ARGS
# adds flags to every dprl train or dprl demo line (ARGS="--clip 1" repeats the
# runs made at the clipping norm before 2026-11-30). On 2 cores: train about 2.5 minutes per seed,
# ppo about 1.5, agent about 25.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$1
MODE=$2
shift 2
SEEDS=("$@")
[ ${#SEEDS[@]} -gt 0 ] || SEEDS=(201 202 203 204 205 206 207 208 209 210)
mkdir -p "$OUT"
files=()
go build -o "$OUT/dprl" ./cmd/dprl
summary() { # file of a dprl train --json result: one line per run
	python3 - "$1" <<'PY'
import json, math, sys
d = json.load(open(sys.argv[1]))
runs = d.get("runs") or [d]
for r in runs:
    m = r.get("eval_mean")
    s = r.get("eval_std")
    print("seed %d: %.1f (standard error %.1f over %d episodes)" % (r["seed"], m, s / math.sqrt(d["eval_episodes"]), d["eval_episodes"]))
PY
}
overall() { # mean and std over seeds of the per-seed JSON files given
	python3 - "$@" <<'PY'
import json, statistics, sys
ms = []
for f in sys.argv[1:]:
    d = json.load(open(f))
    ms.append(d["eval_mean"] if "eval_mean" in d else d["mean_return"])
if len(ms) > 1:
    print("mean %.1f, std %.1f over %d seeds (min %.1f)" % (statistics.mean(ms), statistics.stdev(ms), len(ms), min(ms)))
PY
}
case $MODE in
train | ppo)
	algo=dppg
	args=(--epsilon 5)
	if [ "$MODE" = ppo ]; then
		algo=ppo
		args=()
	fi
	for seed in "${SEEDS[@]}"; do
		f="$OUT/$MODE-$seed.json"
		# shellcheck disable=SC2086 # ARGS is split into flags
		"$OUT/dprl" train --env recsys --algo $algo "${args[@]}" ${ARGS:-} --seed "$seed" --eval-episodes 500 --json >"$f" 2>"$OUT/$MODE-$seed.log"
		summary "$f"
		files+=("$f")
	done
	overall "${files[@]}"
	;;
agent)
	for seed in "${SEEDS[@]}"; do
		data="$OUT/agent-$seed"
		rm -rf "$data"
		# shellcheck disable=SC2086 # ARGS is split into flags
		"$OUT/dprl" demo --env recsys --user-epsilon 5 --users "${USERS:-80000}" ${ARGS:-} --seed "$seed" --data "$data" --returning 0 --flush-timeout 1m --max-duration 0 --json >"$data.json" 2>"$data.log"
		"$OUT/dprl" ledger snapshot --data "$data" --out "$data.snap" --force >/dev/null
		"$OUT/dprl" sims generate --env recsys --behavior "policy:$data.snap" --episodes 500 --seed $((1000 + seed)) \
			--out "$data-eval.jsonl" --json >"$data-eval.json"
		python3 - "$seed" "$data.json" "$data-eval.json" <<'PY'
import json, math, sys
seed, demo, ev = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
print("seed %s: %.1f (standard error %.1f over %d episodes); version %d, per-user epsilon %.3f at delta %g" % (
    seed, ev["mean_return"], ev["std_return"] / math.sqrt(ev["episodes"]), ev["episodes"],
    demo["version"], demo["user_epsilon_bound"], demo["delta"]))
PY
		files+=("$data-eval.json")
	done
	overall "${files[@]}"
	;;
*)
	echo "mode $MODE: want train, ppo or agent" >&2
	exit 2
	;;
esac
