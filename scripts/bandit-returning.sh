#!/usr/bin/env bash
# Returning users who keep learning, on the contextual bandit (docs/agent.md,
# "Returning users"): the DP agent with the linear contextual bandit over NATS
# (dprl demo --learner lincb), SESSIONS sessions per run on seeds 101-105,
# at a lifetime user-level epsilon of 5 (delta 1e-5):
#   once:      every session a new user, one update each (z = 0.892);
#   once-half: SESSIONS/2 new users, one update each (z = 0.892);
#   returning: each session from an earlier user with probability 0.5 (about
#              SESSIONS/2 distinct users), each user in at most 4 updates
#              (z = 1.784: 4 Gaussian mechanisms compose to epsilon 5).
# It prints, per run, the final release's exact expected click on 20,000
# held-out users, the users the ledger charged and the most-used user's
# updates and epsilon (also at delta 1e-10).
#
#   scripts/bandit-returning.sh [OUTDIR [SESSIONS [K]]]
#
# SESSIONS (default 50000) sets the runs' sessions (once-half: half of
# them), K (default the profile's 1000) the first block. About 5 minutes on
# 2 cores at the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d)}
N=${2:-50000}
K=${3:-1000}
mkdir -p "$OUT"
go build -o "$OUT/dprl" ./cmd/dprl
for seed in 101 102 103 104 105; do
	for run in once once-half returning; do
		case $run in
		once) args="--users $N --returning 0 --max-updates-per-user 1" ;;
		once-half) args="--users $((N / 2)) --returning 0 --max-updates-per-user 1" ;;
		returning) args="--users $N --returning 0.5 --max-updates-per-user 4" ;;
		esac
		data="$OUT/$run-$seed"
		rm -rf "$data"
		# shellcheck disable=SC2086
		"$OUT/dprl" demo --env bandit --learner lincb --K "$K" --user-epsilon 5 --seed "$seed" --data "$data" $args --json >"$data.json" 2>"$data.log"
		"$OUT/dprl" ledger show --data "$data" --json >"$data.ledger.json"
		"$OUT/dprl" ledger show --data "$data" --delta 1e-10 --json >"$data.ledger-1e-10.json"
		python3 - "$run" "$seed" "$data" <<'PY'
import json, sys
run, seed, data = sys.argv[1:]
r = json.load(open(data + ".json"))
l = json.load(open(data + ".ledger.json"))
l10 = json.load(open(data + ".ledger-1e-10.json"))
m, m10 = l["max_user"], l10["max_user"]
print(f"{run:10s} seed {seed}: sessions {r['users']}, updates {r['updates']}, z {r['z']:.4g}, "
      f"expected click {r['sim_exact']['policy']:.4f}; users charged {l['users']}; "
      f"most-used user: {m['updates']} updates, epsilon {m['epsilon']:.4f} at delta 1e-5, {m10['epsilon']:.4f} at 1e-10")
PY
	done
done
