package policy

import "fmt"

// GAE writes generalised advantage estimates (Schulman et al. 2016) and
// returns (advantage + value, the value-function targets) for one trajectory of
// T = len(rewards) steps into adv and ret (len T each).
//
// values has length T+1: values[t] = V(s_t) for t < T and values[T] = V(s_T),
// the value of the final observation. If terminal, s_T is absorbing and
// values[T] is ignored (treated as 0); otherwise the trajectory was truncated
// and the last step bootstraps from values[T]:
//
//	delta_t = r_t + gamma V(s_{t+1}) - V(s_t)
//	A_t = delta_t + gamma lambda A_{t+1},  A_T = 0
//
// GAE allocates nothing. T = 0 is allowed and writes nothing.
func GAE(adv, ret, rewards, values []float64, terminal bool, gamma, lambda float64) {
	T := len(rewards)
	if len(adv) != T || len(ret) != T || len(values) != T+1 {
		panic(fmt.Sprintf("policy: gae lengths adv %d ret %d rewards %d values %d", len(adv), len(ret), T, len(values)))
	}
	next := values[T]
	if terminal {
		next = 0
	}
	a := 0.0
	for t := T - 1; t >= 0; t-- {
		delta := rewards[t] + gamma*next - values[t]
		a = delta + gamma*lambda*a
		adv[t] = a
		ret[t] = a + values[t]
		next = values[t]
	}
}
