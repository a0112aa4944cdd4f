package ledger

// verifyCorrelation checks a release's correlated-noise parameters
// (recomputing the factor and the sensitivity), that it continues its
// stream from the previous release with the same parameters, z, S and K,
// or starts one, and every participating user's pattern against the
// counters replayed so far (before this release's). A release without
// Correlation has nothing to check.
func verifyCorrelation(e Entry, prev *Entry, users map[UserKey]*UserState, problem func(string, ...any)) {
	c := e.Correlation
	if c == nil {
		return
	}
	if err := checkCorrelation(c, e.PolicyVersion, epsTolerance); err != nil {
		problem("entry %d: %v", e.Seq, err)
		return
	}
	if c.StreamStart < e.PolicyVersion {
		if prev == nil || prev.PolicyVersion+1 != e.PolicyVersion || !c.SameStream(prev.Correlation) || prev.Z != e.Z || prev.S != e.S || prev.K != e.K {
			problem("entry %d: release %d continues the correlated-noise stream of version %d, but the previous release is not of that stream with the same z, S and K", e.Seq, e.PolicyVersion, c.StreamStart)
		}
	}
	for _, u := range e.Users {
		st := UserState{}
		if p := users[u]; p != nil {
			st = *p
		}
		if err := allows(c, st, e.PolicyVersion); err != nil {
			problem("entry %d: user %s: %v", e.Seq, u, err)
		}
	}
}

// streamTail holds the latest releases of the current correlated-noise
// stream, at most its Band - 1, oldest first (those that keep a record).
type streamTail []Entry

// note adds a release (in version order).
func (t *streamTail) note(e Entry) {
	c := e.Correlation
	switch {
	case c == nil:
		*t = nil
		return
	case c.StreamStart == e.PolicyVersion:
		*t = (*t)[:0]
	}
	*t = append(*t, e)
	if n := max(c.Band-1, 0); len(*t) > n {
		*t = append((*t)[:0], (*t)[len(*t)-n:]...)
	}
}

// verifyNoise checks the noise records against the latest release: with
// correlated noise of more than one band, exactly the versions max(stream
// start, head - Band + 2) .. head must have a record, each with an intact
// checksum, the stream's parameters, the hash of its version's entry, one
// shape, and chained to the record before it; otherwise there must be
// none. A stream may instead have ended (a backup left its records out):
// then there is no record and the end marker names the latest release, its
// version, stream start and entry hash (noted). It reports versions and
// shapes only, never a record's content.
func (s *Store) verifyNoise(last *Entry, tail streamTail, problem, note func(string, ...any)) error {
	recs, err := s.intactNoiseRecords(problem)
	if err != nil {
		return err
	}
	if s.verifyNoiseEnd(last, len(recs), problem, note) {
		return nil
	}
	if last == nil || last.Correlation == nil || last.Correlation.Band == 1 {
		if len(recs) > 0 {
			problem("%d noise records, but the latest release keeps no correlated-noise state", len(recs))
		}
		return nil
	}
	checkNoiseWindow(last, recs, problem)
	checkNoiseRecords(recs, tail, problem)
	return nil
}

// intactNoiseRecords returns the noise records that decode and sit under
// their own version, in version order, reporting every other one.
func (s *Store) intactNoiseRecords(problem func(string, ...any)) ([]noiseRecord, error) {
	var recs []noiseRecord
	err := s.scan(prefNoise, prefixEnd(prefNoise), func(k, v []byte) error {
		if len(k) != len(prefNoise)+8 {
			problem("noise record key of %d bytes", len(k))
			return nil
		}
		ver := be64Value(k[len(prefNoise):])
		r, err := decodeNoise(v)
		switch {
		case err != nil:
			problem("noise record of version %d: %v", ver, err)
		case r.Version != ver:
			problem("noise record under version %d says version %d", ver, r.Version)
		default:
			recs = append(recs, r)
		}
		return nil
	})
	return recs, err
}

// verifyNoiseEnd checks the noise stream's end marker, if there is one,
// against the latest release and the number of noise records left (nrecs),
// and reports whether the stream ended.
func (s *Store) verifyNoiseEnd(last *Entry, nrecs int, problem, note func(string, ...any)) bool {
	var end noiseEnd
	ended, err := s.getJSON(keyNoiseEnd, &end)
	if err != nil {
		problem("the noise stream's end marker: %v", err)
		return false
	}
	if !ended {
		return false
	}
	switch c := last.correlation(); {
	case c == nil || c.Band == 1:
		problem("an end marker for the noise stream of version %d, but the latest release keeps no correlated-noise state", end.Version)
	case end.Version != last.PolicyVersion || end.StreamStart != c.StreamStart || end.Entry != last.Hash:
		problem("the noise stream's end marker names version %d of the stream from version %d, but the latest release is version %d of the stream from version %d, or another entry", end.Version, end.StreamStart, last.PolicyVersion, c.StreamStart)
	case nrecs > 0:
		problem("the noise stream ended at version %d, but %d noise records remain", end.Version, nrecs)
	default:
		note("the correlated-noise stream from version %d ended at version %d (%s): its records are gone and the next release starts a new stream", end.StreamStart, end.Version, end.Reason)
	}
	return true
}

// checkNoiseWindow checks that the noise records are exactly those of
// versions max(stream start, head - Band + 2) .. head, for the latest
// release last (which has correlated noise of more than one band).
func checkNoiseWindow(last *Entry, recs []noiseRecord, problem func(string, ...any)) {
	c, v := last.Correlation, last.PolicyVersion
	from := c.StreamStart
	if back := uint64(c.Band - 2); v >= back && v-back > from {
		from = v - back
	}
	if want := v - from + 1; uint64(len(recs)) != want || len(recs) > 0 && (recs[0].Version != from || recs[len(recs)-1].Version != v) {
		problem("noise records: %d, the stream of version %d needs exactly those of versions %d to %d", len(recs), v, from, v)
	}
}

// checkNoiseRecords checks each noise record against its release in the
// stream's tail (entry hash and parameters), that only a later record
// chains to a predecessor, and the chain of checksums.
func checkNoiseRecords(recs []noiseRecord, tail streamTail, problem func(string, ...any)) {
	entries := map[uint64]Entry{}
	for _, e := range tail {
		entries[e.PolicyVersion] = e
	}
	for _, r := range recs {
		e, ok := entries[r.Version]
		switch {
		case !ok:
			problem("noise record of version %d: no release of that version in the stream", r.Version)
		case r.Entry != e.Hash:
			problem("noise record of version %d names another entry than the release's", r.Version)
		case !r.sameParams(e):
			problem("noise record of version %d: parameters differ from its release's", r.Version)
		case r.Version == r.StreamStart && r.Prev != "":
			problem("noise record of version %d starts the stream but chains to a predecessor", r.Version)
		}
	}
	if err := checkChain(recs); err != nil {
		problem("%v", err)
	}
}

// sameParams reports whether the noise record has the stream parameters
// and the z, S and K of its release e.
func (r noiseRecord) sameParams(e Entry) bool {
	c := e.Correlation
	return c != nil && r.StreamStart == c.StreamStart && r.Band == c.Band && r.MinSep == c.MinSeparation &&
		r.MaxPart == c.MaxParticipations && r.Z == e.Z && r.S == e.S && r.K == e.K
}

// correlation is the entry's Correlation (nil for a nil entry).
func (e *Entry) correlation() *Correlation {
	if e == nil {
		return nil
	}
	return e.Correlation
}
