#!/usr/bin/env bash
# Reproduces the sublinear RiverSwim regret of log-linear DPPG (policy/
# REPRODUCE.md, "What sublinear regret takes"; README table): DPPG-L2 and
# DPPG-KL at epsilon 5 and 1 (policy and private baseline composed, delta
# 1e-5), p = 0.6 and 0.9, with a constant step size and a trust region alpha
# chosen so that the clipping norm of Propositions 4.4 / 4.7 is S = 5 (large
# enough to keep the rare rewarding episodes, see TestClippedGradientBias),
# then the figures docs/regret-riverswim-sublinear*.png.
#
#   scripts/riverswim-sublinear.sh [OUTDIR]
#
# About 3 hours on 2 cores (the epsilon 1 runs play 60-100 million episodes
# per seed; L2 runs at about 300,000 episodes/s, KL at 60,000-100,000).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d)}
mkdir -p "$OUT"
go build -o "$OUT/dprl" ./cmd/dprl
D="$OUT/dprl train --algo dppg-loglinear --baseline-lr 0.01 --seed 1 --json"

# epsilon 5 (z = 1.261): eta 7.5e-5; alpha for S = 5.
$D --env riverswim     --eps 5 --region l2 --eta 7.5e-5 --alpha 1.48e-6 --episodes 7000000 --seeds 8 >"$OUT/l2-eps5-p0.6.json"
$D --env riverswim-0.9 --eps 5 --region l2 --eta 7.5e-5 --alpha 1.48e-6 --episodes 7000000 --seeds 8 >"$OUT/l2-eps5-p0.9.json"
# KL at p = 0.6 needs half the step (and alpha / 4 for the same S): at 7.5e-5
# one seed of eight stayed at "always left" (policy/REPRODUCE.md).
$D --env riverswim     --eps 5 --region kl --eta 3.75e-5 --alpha 4.65e-8 --episodes 14000000 --seeds 8 >"$OUT/kl-eps5-p0.6.json"
$D --env riverswim-0.9 --eps 5 --region kl --eta 7.5e-5 --alpha 1.86e-7 --episodes 7000000 --seeds 8 >"$OUT/kl-eps5-p0.9.json"
# epsilon 1 (z = 5.276): eta 4.3e-6; alpha for S = 5.
$D --env riverswim     --eps 1 --region l2 --eta 4.3e-6 --alpha 8.12e-8 --episodes 100000000 --seeds 4 >"$OUT/l2-eps1-p0.6.json"
$D --env riverswim-0.9 --eps 1 --region l2 --eta 4.3e-6 --alpha 8.12e-8 --episodes 60000000 --seeds 4 >"$OUT/l2-eps1-p0.9.json"
# KL at epsilon 1: half the L2 step too (seed 2 still stays at "always left").
$D --env riverswim     --eps 1 --region kl --eta 2.15e-6 --alpha 2.1e-9 --episodes 60000000 --seeds 2 >"$OUT/kl-eps1-p0.6.json"
$D --env riverswim-0.9 --eps 1 --region kl --eta 2.15e-6 --alpha 2.1e-9 --episodes 60000000 --seeds 2 >"$OUT/kl-eps1-p0.9.json"

for p in 0.6 0.9; do
  "$OUT/dprl" plot regret --log --out "docs/regret-riverswim-sublinear-p$p.png" "$OUT"/*-p$p.json
done
echo "results in $OUT"
