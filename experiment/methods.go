package experiment

import (
	"fmt"
	"slices"
	"strings"

	"dprl/policy"
)

// Methods returns the algorithms of dprl train, each run by one driver:
// Train (dppg, ppo), RunLogLinear, RunDPSGD (its two) and RunSAC.
func Methods() []string {
	return []string{MethodDPPG, MethodPPO, LogLinearMethod, policy.AlgoDPSGDReinforce, policy.AlgoDPSGDDQN, MethodSAC}
}

// CheckMethod returns an error naming the methods if m is not one.
func CheckMethod(m string) error {
	all := Methods()
	if slices.Contains(all, m) {
		return nil
	}
	return fmt.Errorf("%q: want %s or %s", m, strings.Join(all[:len(all)-1], ", "), all[len(all)-1])
}
