package main

import "dprl/ledger/accountant"

// accountantEpsilon is the exact per-session epsilon of one DPPG update.
func accountantEpsilon(z, delta float64) (float64, error) {
	return accountant.GaussianEpsilon(z, delta)
}
