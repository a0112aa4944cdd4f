// Package qlearn holds the discrete-action offline Q-learners of the
// expert-level system ("Preserving Expert-Level Privacy in Offline
// Reinforcement Learning"): conservative Q-learning (CQL, Kumar et al.,
// "Conservative Q-Learning for Offline Reinforcement Learning", 2020) and
// batch-constrained Q-learning (discrete BCQ, Fujimoto et al.,
// "Benchmarking Batch Deep Reinforcement Learning Algorithms", 2019).
//
// This file holds their per-batch losses and gradients with respect to the
// networks' outputs, as pure functions of the outputs, so that they can be
// checked against hand-computed values; the networks and the training loops
// build on them.
package qlearn

import (
	"fmt"
	"math"
)

// Batch is B transitions of a discrete-action log, as the losses see them:
// the taken actions, rewards, and whether each transition ended its
// episode (no bootstrap).
type Batch struct {
	Actions  []int
	Rewards  []float64
	Terminal []bool
}

// check panics on a batch that does not fit B rows of A actions.
func (b Batch) check(B, A int) {
	if len(b.Actions) != B || len(b.Rewards) != B || len(b.Terminal) != B {
		panic(fmt.Sprintf("qlearn: batch of %d actions, %d rewards, %d terminal flags, want %d", len(b.Actions), len(b.Rewards), len(b.Terminal), B))
	}
	for i, a := range b.Actions {
		if a < 0 || a >= A {
			panic(fmt.Sprintf("qlearn: action %d at row %d, want [0, %d)", a, i, A))
		}
	}
}

// logSumExp returns log sum_j exp(x_j), computed stably.
func logSumExp(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, v)
	}
	if math.IsInf(m, 0) {
		return m
	}
	var s float64
	for _, v := range x {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

// CQLLoss returns discrete CQL's loss on a batch (Kumar et al. 2020,
// eq. 4 with the CQL(H) regulariser, as its discrete-action
// implementation):
//
//	L = 1/B sum_i [ 1/2 (Q(s_i, a_i) - y_i)^2 + alpha (log sum_a exp Q(s_i, a) - Q(s_i, a_i)) ],
//	y_i = r_i + gamma (1 - d_i) max_a' Qtarget(s'_i, a'),
//
// where q holds Q(s_i, .) (B x A, row-major) and next holds Qtarget(s'_i,
// .) (B x A; ignored on terminal rows). It writes dL/dq into dq (B x A);
// the targets are constants (no gradient flows into next).
func CQLLoss(dq, q, next []float64, A int, b Batch, gamma, alpha float64) float64 {
	B := len(b.Actions)
	if len(q) != B*A || len(next) != B*A || len(dq) != B*A {
		panic(fmt.Sprintf("qlearn: q %d, next %d, dq %d values for %d x %d", len(q), len(next), len(dq), B, A))
	}
	b.check(B, A)
	inv := 1 / float64(B)
	var loss float64
	for i := range B {
		row, nrow, drow := q[i*A:(i+1)*A], next[i*A:(i+1)*A], dq[i*A:(i+1)*A]
		y := b.Rewards[i]
		if !b.Terminal[i] {
			m := math.Inf(-1)
			for _, v := range nrow {
				m = max(m, v)
			}
			y += gamma * m
		}
		a := b.Actions[i]
		td := row[a] - y
		lse := logSumExp(row)
		loss += (0.5*td*td + alpha*(lse-row[a])) * inv
		for j, v := range row {
			drow[j] = alpha * math.Exp(v-lse) * inv // alpha softmax
		}
		drow[a] += (td - alpha) * inv
	}
	return loss
}

// BCQTargets writes discrete BCQ's bootstrap targets (Fujimoto et al.
// 2019, Algorithm 1 with its discrete-action filter) into y:
//
//	y_i = r_i + gamma (1 - d_i) Qtarget(s'_i, a*_i),
//	a*_i = argmax over a' with G(a'|s'_i) / max_a G(a|s'_i) > tau of Q(s'_i, a'),
//
// where qNext holds the online network's Q(s'_i, .), tNext the target
// network's, and gNext the imitation network's logits at s'_i (all B x A).
// The filter compares probabilities through logits: G(a')/max G > tau is
// logit(a') - max logit > log tau. The most probable action always passes,
// so the argmax is never empty.
func BCQTargets(y, qNext, tNext, gNext []float64, A int, b Batch, gamma, tau float64) {
	B := len(b.Actions)
	if len(y) != B || len(qNext) != B*A || len(tNext) != B*A || len(gNext) != B*A {
		panic(fmt.Sprintf("qlearn: y %d, q %d, target %d, imitation %d values for %d x %d", len(y), len(qNext), len(tNext), len(gNext), B, A))
	}
	b.check(B, A)
	lt := math.Log(tau)
	for i := range B {
		y[i] = b.Rewards[i]
		if b.Terminal[i] {
			continue
		}
		g := gNext[i*A : (i+1)*A]
		gm := math.Inf(-1)
		for _, v := range g {
			gm = max(gm, v)
		}
		best, bq := -1, math.Inf(-1)
		for a := range A {
			if g[a]-gm > lt || g[a] == gm {
				if q := qNext[i*A+a]; best < 0 || q > bq {
					best, bq = a, q
				}
			}
		}
		y[i] += gamma * tNext[i*A+best]
	}
}

// BCQLoss returns discrete BCQ's loss on a batch given the targets y
// (BCQTargets): the Huber loss of Q(s_i, a_i) - y_i (threshold 1, as DQN),
// plus the imitation network's cross-entropy on the logged action and
// reg times the mean squared logit (the original's 1e-2 regulariser):
//
//	L = 1/B sum_i [ huber(Q(s_i, a_i) - y_i) - log softmax(g_i)[a_i] + reg/A sum_a g_ia^2 ].
//
// q and g are B x A (the Q and imitation outputs at s_i); it writes dL/dq
// into dq and dL/dg into dg.
func BCQLoss(dq, dg, q, g, y []float64, A int, b Batch, reg float64) float64 {
	B := len(b.Actions)
	if len(q) != B*A || len(g) != B*A || len(dq) != B*A || len(dg) != B*A || len(y) != B {
		panic(fmt.Sprintf("qlearn: q %d, g %d, dq %d, dg %d, y %d values for %d x %d", len(q), len(g), len(dq), len(dg), len(y), B, A))
	}
	b.check(B, A)
	inv := 1 / float64(B)
	var loss float64
	for i := range B {
		a := b.Actions[i]
		qrow, grow := q[i*A:(i+1)*A], g[i*A:(i+1)*A]
		dqrow, dgrow := dq[i*A:(i+1)*A], dg[i*A:(i+1)*A]
		clear(dqrow)
		d := qrow[a] - y[i]
		if math.Abs(d) <= 1 {
			loss += 0.5 * d * d * inv
			dqrow[a] = d * inv
		} else {
			loss += (math.Abs(d) - 0.5) * inv
			dqrow[a] = math.Copysign(inv, d)
		}
		lse := logSumExp(grow)
		loss += (lse - grow[a]) * inv
		for j, v := range grow {
			loss += reg / float64(A) * v * v * inv
			dgrow[j] = (math.Exp(v-lse) + 2*reg/float64(A)*v) * inv
		}
		dgrow[a] -= inv
	}
	return loss
}
