#!/usr/bin/env bash
# Stable-prefix yield of dprl offline svt against eps1 and the number of
# experts M: the README's "SVT" tables.
#
#   offline/svt/testdata/yield.sh ENV OUT [MS] [N]
#
# ENV is cartpole or acrobot; OUT a scratch directory; MS the expert counts
# (default "500 1000 2000 3000", the largest is generated); N trajectories per
# expert (default 3). DPRL names the binary (default: dprl on PATH). The
# experts are generated once (30 bases of 3000 users, fine-tuned for 300 users
# per expert on its variation, seed 1) and the log for M experts is the first
# M*N lines of the full log (the log is in expert order and the variations are
# shuffled, so its first M experts are a random subset of grid cells). Each
# run uses T = 25 queries (the paper's CartPole setting at eps = 10),
# delta1 = 1/M (the paper), p_min = 0.02, L = 500, seeds 1-3. The runs are
# charged to one ledger in OUT with a raised cap: a simulation study on
# synthetic data, not a release.
#
# Prints a TSV of every run (OUT/ENV-runs.tsv) and a markdown table of the
# means over seeds; with TABLE_ONLY=1 it only prints the table of an existing
# OUT/ENV-runs.tsv.
set -euo pipefail
env=${1:?ENV}
out=${2:?OUT}
ms=${3:-500 1000 2000 3000}
n=${4:-3}
dprl=${DPRL:-dprl}
mmax=0
for m in $ms; do ((m > mmax)) && mmax=$m; done
mkdir -p "$out"
if [[ ! -s "$out/$env.jsonl" ]]; then
	nice "$dprl" sims experts --env "$env" --m "$mmax" --trajectories "$n" --bases 30 --users 3000 \
		--finetune-users 300 --out-dir "$out/$env-experts" --log "$out/$env.jsonl" --seed 1 --json >"$out/$env-gen.json"
fi
runs="$out/$env-runs.tsv"
if [[ "${TABLE_ONLY:-}" != 1 ]]; then
printf 'env\tM\teps1\tseed\tqueried\tqueried_transitions\tstable_prefixes\tstable_transitions\tstable_fraction\tqueried_stable_fraction\n' >"$runs"
for m in $ms; do
	data="$out/$env-m$m.jsonl"
	head -n $((m * n)) "$out/$env.jsonl" >"$data"
	delta=$(awk -v m="$m" 'BEGIN { printf "%.10g", 1 / m }')
	for eps in 5 7.5 10; do
		for seed in 1 2 3; do
			nice "$dprl" --log-level warn offline svt --data "$data" --experts "$out/$env-experts" \
				--epsilon "$eps" --delta "$delta" --pmin 0.02 --queries 25 --max-len 500 \
				--out-stable "$out/stable.jsonl" --out-unstable "$out/unstable.jsonl" --force \
				--ledger "$out/ledger" --dataset-epsilon 1000 --dataset-delta 0.5 --seed "$seed" --json |
				jq -r --arg env "$env" --arg m "$m" --arg eps "$eps" --arg seed "$seed" \
					'[$env, $m, $eps, $seed, .queried, .non_private.queried_transitions, .stable_trajectories, .stable_transitions, .non_private.stable_fraction, .non_private.queried_stable_fraction] | @tsv' >>"$runs"
		done
	done
	rm -f "$data"
done
cat "$runs"
echo
fi
echo "| M | eps1 | stable transitions (seeds 1-3) | stable prefixes (of 3 x 25 queried) | mean prefix length | stable / queried transitions | stable / all transitions |"
echo "|---|---|---|---|---|---|---|"
awk -F'\t' 'NR > 1 {
	k = $2 "\t" $3; if (!(k in n)) order[++K] = k
	n[k]++; st[k] = st[k] (n[k] > 1 ? ", " : "") $8; p[k] += $7; t[k] += $8; q[k] += $10; a[k] += $9
} END {
	for (i = 1; i <= K; i++) { k = order[i]; split(k, f, "\t")
		len = p[k] > 0 ? sprintf("%.1f", t[k] / p[k]) : "-"
		printf "| %s | %s | %s | %d | %s | %.4f | %.2e |\n", f[1], f[2], st[k], p[k], len, q[k] / n[k], a[k] / n[k] }
}' "$runs"
