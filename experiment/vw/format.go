// Package vw runs Vowpal Wabbit (VW) as a peer learner and server on the
// contextual-bandit simulator (sims.Bandit), beside dprl's own learners
// (package experiment/bandit): it is dprl bench vw.
//
// VW runs as a daemon (vw --cb_explore_adf --daemon) that this package
// starts and talks to over one TCP connection in VW's text format: each
// user is one action-dependent-features (ADF) example, a shared line with
// the user's features (namespace U) and one line per item holding the
// item's index (namespace A), so that -q UA gives VW the user x item
// interactions. VW answers each example with its probability mass function
// (PMF) over the items; the driver samples the served item from it, draws
// the click from the simulator's exact click probability and sends the
// example back labelled index:cost:probability (cost = -click). The PMF is
// scored exactly: the expected click sum_a pmf(a) P(click | x, a).
//
// Every value is simulation only: the users are draws from the public
// simulator, not anybody's data, and VW is not private (no guarantee covers
// its outputs).
package vw

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Label is the feedback on one served example: the served item, its cost
// (VW minimises cost: minus the click) and the probability with which it
// was served.
type Label struct {
	Index int
	Cost  float64
	Prob  float64
}

// ErrFormat marks an example that cannot be written in VW's text format.
var ErrFormat = errors.New("vw: cannot format example")

// AppendExample appends the ADF example of a user with features x over
// items items to dst: "shared |U f<j>:<x_j>" (features of value 0
// omitted), then one line "|A i<a>" per item, the served item's line
// prefixed with lab's "index:cost:prob" when lab is not nil, and the empty
// line that ends a multi-line example.
func AppendExample(dst []byte, x []float64, items int, lab *Label) ([]byte, error) {
	if items < 1 {
		return dst, fmt.Errorf("%w: %d items, want >= 1", ErrFormat, items)
	}
	for j, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return dst, fmt.Errorf("%w: feature %d is %v", ErrFormat, j, v)
		}
	}
	if lab != nil {
		if lab.Index < 0 || lab.Index >= items {
			return dst, fmt.Errorf("%w: label index %d outside [0, %d)", ErrFormat, lab.Index, items)
		}
		if math.IsNaN(lab.Cost) || math.IsInf(lab.Cost, 0) {
			return dst, fmt.Errorf("%w: label cost %v", ErrFormat, lab.Cost)
		}
		if !(lab.Prob > 0 && lab.Prob <= 1) {
			return dst, fmt.Errorf("%w: label probability %v, want in (0, 1]", ErrFormat, lab.Prob)
		}
	}
	dst = append(dst, "shared |U"...)
	for j, v := range x {
		if v == 0 {
			continue
		}
		dst = append(dst, " f"...)
		dst = strconv.AppendInt(dst, int64(j), 10)
		dst = append(dst, ':')
		dst = appendFloat(dst, v)
	}
	dst = append(dst, '\n')
	for a := range items {
		if lab != nil && a == lab.Index {
			dst = strconv.AppendInt(dst, int64(a), 10)
			dst = append(dst, ':')
			dst = appendFloat(dst, lab.Cost)
			dst = append(dst, ':')
			dst = appendFloat(dst, lab.Prob)
			dst = append(dst, ' ')
		}
		dst = append(dst, "|A i"...)
		dst = strconv.AppendInt(dst, int64(a), 10)
		dst = append(dst, '\n')
	}
	return append(dst, '\n'), nil
}

// appendFloat writes v in plain decimal notation (no exponent), which
// every VW float parser reads.
func appendFloat(dst []byte, v float64) []byte {
	if v == 0 {
		return append(dst, '0')
	}
	return strconv.AppendFloat(dst, v, 'f', -1, 64)
}

// ErrReply marks a daemon reply that is not a PMF over the items.
var ErrReply = errors.New("vw: bad daemon reply")

// pmfTolerance is how far the PMF's sum may be from 1: VW computes in
// single precision and prints about 6 significant digits.
const pmfTolerance = 1e-3

// ParsePMF parses the daemon's reply to one --cb_explore_adf example,
// "a:p,a:p,..." (one pair per item, in any order; surrounding white space
// ignored), into pmf (len items, written in place and returned). Every item
// must appear exactly once with a probability in [0, 1], and the
// probabilities must sum to 1 within pmfTolerance; they are then
// normalised to sum to 1 exactly.
func ParsePMF(pmf []float64, reply []byte, items int) ([]float64, error) {
	if len(pmf) != items {
		pmf = make([]float64, items)
	}
	for i := range pmf {
		pmf[i] = -1
	}
	s := bytes.TrimSpace(reply)
	if len(s) == 0 {
		return nil, fmt.Errorf("%w: empty reply, want one action:probability pair per item", ErrReply)
	}
	n, sum := 0, 0.0
	for len(s) > 0 {
		var pair []byte
		if i := bytes.IndexByte(s, ','); i >= 0 {
			pair, s = s[:i], s[i+1:]
		} else {
			pair, s = s, nil
		}
		c := bytes.IndexByte(pair, ':')
		if c < 0 {
			return nil, fmt.Errorf("%w: %q: pair %q is not action:probability", ErrReply, clip(reply), pair)
		}
		a, err := strconv.Atoi(string(pair[:c]))
		if err != nil || a < 0 || a >= items {
			return nil, fmt.Errorf("%w: %q: action %q is not an item index in [0, %d)", ErrReply, clip(reply), pair[:c], items)
		}
		p, err := strconv.ParseFloat(string(pair[c+1:]), 64)
		if err != nil || !(p >= 0 && p <= 1) {
			return nil, fmt.Errorf("%w: %q: probability %q of action %d is not in [0, 1]", ErrReply, clip(reply), pair[c+1:], a)
		}
		if pmf[a] >= 0 {
			return nil, fmt.Errorf("%w: %q: action %d appears twice", ErrReply, clip(reply), a)
		}
		pmf[a] = p
		sum += p
		n++
	}
	if n != items {
		return nil, fmt.Errorf("%w: %q: %d actions, want %d (one per item)", ErrReply, clip(reply), n, items)
	}
	if math.Abs(sum-1) > pmfTolerance {
		return nil, fmt.Errorf("%w: %q: probabilities sum to %v, want 1", ErrReply, clip(reply), sum)
	}
	for i := range pmf {
		pmf[i] /= sum
	}
	return pmf, nil
}

// clip shortens a reply for an error message.
func clip(b []byte) string {
	const max = 80
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}

// Sample returns the item drawn from pmf with the uniform draw u in [0, 1)
// (the last item with positive probability absorbs rounding).
func Sample(pmf []float64, u float64) int {
	last := 0
	for a, p := range pmf {
		if p <= 0 {
			continue
		}
		last = a
		if u < p {
			return a
		}
		u -= p
	}
	return last
}
