package agent

import (
	"errors"
	"time"

	"dprl/ledger"
)

// Probes of a paused updater: the first after probeMin, doubling up to
// probeMax while the disk stays full.
const (
	probeMin = 100 * time.Millisecond
	probeMax = 5 * time.Second
)

// Blocked is why the agent cannot release now (nil when it can): the
// ledger's disk is full and releases are paused until a write succeeds.
// The last released version is still served. /readyz reports it.
func (a *Agent) Blocked() error {
	if p := a.blocked.Load(); p != nil {
		return *p
	}
	return nil
}

// pauseDiskFull pauses releases after a release of version ver failed on
// a full disk that this process can wait out (ledger.ErrDiskFull without
// ErrNeedsRestart): no batch is formed, so no session is used, until
// resumeIfWritable finds the store writable. It reports whether the
// release was committed all the same (its head record was what failed):
// it is then the ledger's head and must be published.
func (u *updater) pauseDiskFull(err error, ver uint64) (committed bool) {
	a := u.a
	h, herr := a.store.Head()
	committed = herr == nil && h.Version == ver
	a.blocked.Store(&err)
	u.probe, u.probeAt = probeMin, time.Now().Add(probeMin)
	serving := a.current.Load().num
	if committed {
		serving = ver
	}
	a.log.Error().Err(err).Uint64("version", ver).Bool("committed", committed).Uint64("serving", serving).
		Msg("release failed: the disk is full; releases are paused (the last released version is still served, /readyz says not ready) and resume by themselves once space is freed")
	return committed
}

// canRelease checks, before a batch's round runs, that the ledger can
// take its release: on a full disk that this process can wait out, it
// pauses releases and keeps the batch for when space is back, so that no
// session is spent on a release the ledger would refuse.
func (u *updater) canRelease(ver uint64) bool {
	a := u.a
	err := a.store.Writable()
	if err == nil || !errors.Is(err, ledger.ErrDiskFull) || errors.Is(err, ledger.ErrNeedsRestart) {
		return true // Release says what is wrong
	}
	a.blocked.Store(&err)
	u.probe, u.probeAt = probeMin, time.Now().Add(probeMin)
	a.log.Error().Err(err).Uint64("version", ver).Uint64("serving", a.current.Load().num).
		Msg("the disk is full; releases are paused (the batch waits, the last released version is still served, /readyz says not ready) and resume by themselves once space is freed")
	return false
}

// resumeIfWritable reports whether releases may go on: always when not
// paused; when paused, once a probe finds the store writable (probes are
// spaced out, see probeMin).
func (u *updater) resumeIfWritable() bool {
	a := u.a
	if a.blocked.Load() == nil {
		return true
	}
	now := time.Now()
	if now.Before(u.probeAt) {
		return false
	}
	if err := a.store.Writable(); err != nil {
		u.probe = min(2*u.probe, probeMax)
		u.probeAt = now.Add(u.probe)
		a.blocked.Store(&err)
		return false
	}
	a.blocked.Store(nil)
	a.log.Info().Msg("the ledger can write again: releases resume")
	return true
}
