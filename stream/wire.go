package stream

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"

	"dprl/space"
)

// Limits bound what a decoder accepts. A zero field takes its default.
type Limits struct {
	// MaxMessageBytes is the largest body accepted, in bytes.
	// The default is 64 KiB.
	MaxMessageBytes int
	// MaxObsLen is the largest observation length accepted when the
	// decoder is not given an exact dimension. The default is 4096.
	MaxObsLen int
	// MaxIDLen is the largest session or user id, in bytes. The default is 128.
	MaxIDLen int
}

// DefaultLimits returns the default limits, a fresh value.
func DefaultLimits() Limits {
	return Limits{MaxMessageBytes: 64 << 10, MaxObsLen: 4096, MaxIDLen: 128}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxMessageBytes <= 0 {
		l.MaxMessageBytes = d.MaxMessageBytes
	}
	if l.MaxObsLen <= 0 {
		l.MaxObsLen = d.MaxObsLen
	}
	if l.MaxIDLen <= 0 {
		l.MaxIDLen = d.MaxIDLen
	}
	return l
}

// ActRequest is the body of <prefix>.v1.act: one step of a session.
type ActRequest struct {
	Session string
	User    string
	Obs     []float64
	// Reward is the reward for the previous action; nil on the session's
	// first step, when the field is absent on the wire.
	Reward *float64
	// Origin is not part of the body: the server sets it to the requesting
	// connection's identity as NATS shows it (see ReplyOrigin), for
	// per-connection limits. The decoder leaves it empty.
	Origin string
}

// ActReply is the reply to an act request. Action.Vec != nil marks a
// continuous action, encoded as "action":[...]; otherwise Action.Index is
// encoded as "action":n.
type ActReply struct {
	Action  space.Action
	Version uint64
	Step    int
}

// EndRequest is the body of <prefix>.v1.end: the last reward of a session and
// whether it ended in a terminal state (false: truncated). User is optional
// on the wire ("user", omitted when empty): the user id the session was
// opened with, which the agent requires to match.
type EndRequest struct {
	Session  string
	User     string
	Reward   float64
	Terminal bool
	// Origin is not part of the body: as ActRequest.Origin.
	Origin string
}

// EndReply is the reply to an end request. Used says whether the session's
// trajectory was queued for an update; Reason says why not, if not. Neither
// depends on the user's history: a queued session of a user at a per-user
// cap is set aside later, which the reply does not say (it would tell any
// client naming a user id whether that user took part in updates).
type EndReply struct {
	OK     bool   `json:"ok"`
	Used   bool   `json:"used"`
	Reason string `json:"reason,omitempty"`
}

// PolicyAnnouncement is published on <prefix>.v1.policy on each release:
// the new version and the privacy guarantee of the release.
type PolicyAnnouncement struct {
	Version uint64  `json:"version"`
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

func checkSize(data []byte, lim Limits) *Error {
	if len(data) > lim.MaxMessageBytes {
		return newErr(CodeTooLarge, strconv.Itoa(len(data))+" bytes > limit "+strconv.Itoa(lim.MaxMessageBytes))
	}
	return nil
}

// ParseID returns b as a session or user id if it is a valid one under
// lim (non-empty, at most MaxIDLen bytes, UTF-8, no control character),
// the rule every decoder of the protocol applies.
func ParseID(field string, b []byte, lim Limits) (string, error) {
	s, err := id(field, b, lim.withDefaults())
	if err != nil {
		return "", err
	}
	return s, nil
}

// id validates and copies an id.
func id(field string, b []byte, lim Limits) (string, *Error) {
	switch {
	case len(b) == 0:
		return "", newErr(CodeBadID, field+": empty")
	case len(b) > lim.MaxIDLen:
		return "", newErr(CodeBadID, field+": longer than "+strconv.Itoa(lim.MaxIDLen)+" bytes")
	case !utf8.Valid(b):
		return "", newErr(CodeBadID, field+": not UTF-8")
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if unicode.IsControl(r) {
			return "", newErr(CodeBadID, field+": control character")
		}
		i += n
	}
	return string(b), nil
}

func unknown(k []byte) *Error {
	if len(k) > 64 {
		k = k[:64]
	}
	return newErr(CodeUnknownField, strconv.Quote(string(k)))
}

func dup(field string) *Error { return newErr(CodeBadRequest, field+": duplicate field") }

func missing(field string) *Error { return newErr(CodeMissingField, field) }

// DecodeAct decodes and validates an act request. obsDim > 0 requires an
// observation of exactly that length; obsDim <= 0 accepts 1..lim.MaxObsLen.
// Every failure is an *Error with a registered code.
func DecodeAct(data []byte, lim Limits, obsDim int) (ActRequest, error) {
	var r ActRequest
	if err := DecodeActInto(&r, data, lim, obsDim); err != nil {
		return ActRequest{}, err
	}
	return r, nil
}

// DecodeActInto is DecodeAct decoding into r, reusing r.Obs's storage
// (the observation is appended to r.Obs[:0]) and keeping r.Reward's pointee
// if set. On error r's contents are unspecified.
func DecodeActInto(r *ActRequest, data []byte, lim Limits, obsDim int) error {
	lim = lim.withDefaults()
	if err := checkSize(data, lim); err != nil {
		return err
	}
	maxObs := lim.MaxObsLen
	if obsDim > 0 {
		maxObs = obsDim
	}
	rew := r.Reward
	if cap(r.Obs) < obsDim {
		r.Obs = make([]float64, 0, obsDim)
	}
	r.Session, r.User, r.Obs, r.Reward = "", "", r.Obs[:0], nil
	s := scanner{data: data}
	const fSession, fUser, fObs, fReward = 1, 2, 4, 8
	seen := 0
	err := s.object(func(k []byte) *Error {
		switch string(k) {
		case "session", "user":
			f, bit := "session", fSession
			if k[0] == 'u' {
				f, bit = "user", fUser
			}
			if seen&bit != 0 {
				return dup(f)
			}
			seen |= bit
			if err := s.kind(f, '"'); err != nil {
				return err
			}
			b, err := s.str()
			if err != nil {
				return err
			}
			v, err := id(f, b, lim)
			if err != nil {
				return err
			}
			if bit == fSession {
				r.Session = v
			} else {
				r.User = v
			}
		case "obs":
			if seen&fObs != 0 {
				return dup("obs")
			}
			seen |= fObs
			var err *Error
			r.Obs, err = s.floats(r.Obs, "obs", maxObs)
			if err != nil {
				if err.Code == CodeObsDim && obsDim > 0 {
					err.Message = "obs: want " + strconv.Itoa(obsDim) + " elements, got more"
				}
				return err
			}
		case "reward":
			if seen&fReward != 0 {
				return dup("reward")
			}
			seen |= fReward
			if err := s.kind("reward", '0'); err != nil {
				return err
			}
			f, err := s.num("reward")
			if err != nil {
				return err
			}
			if rew == nil {
				rew = new(float64)
			}
			*rew = f
			r.Reward = rew
		default:
			return unknown(k)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.end(); err != nil {
		return err
	}
	switch {
	case seen&fSession == 0:
		return missing("session")
	case seen&fObs == 0:
		return missing("obs")
	case len(r.Obs) == 0:
		return newErr(CodeObsDim, "obs: empty")
	case obsDim > 0 && len(r.Obs) != obsDim:
		return newErr(CodeObsDim, "obs: want "+strconv.Itoa(obsDim)+" elements, got "+strconv.Itoa(len(r.Obs)))
	}
	return nil
}

// DecodeEnd decodes and validates an end request; session, reward and
// terminal are required, user is optional.
func DecodeEnd(data []byte, lim Limits) (EndRequest, error) {
	lim = lim.withDefaults()
	var r EndRequest
	if err := checkSize(data, lim); err != nil {
		return r, err
	}
	s := scanner{data: data}
	const fSession, fReward, fTerminal, fUser = 1, 2, 4, 8
	seen := 0
	err := s.object(func(k []byte) *Error {
		switch string(k) {
		case "session", "user":
			f, bit, dst := "session", fSession, &r.Session
			if k[0] == 'u' {
				f, bit, dst = "user", fUser, &r.User
			}
			if seen&bit != 0 {
				return dup(f)
			}
			seen |= bit
			if err := s.kind(f, '"'); err != nil {
				return err
			}
			b, err := s.str()
			if err != nil {
				return err
			}
			*dst, err = id(f, b, lim)
			return err
		case "reward":
			if seen&fReward != 0 {
				return dup("reward")
			}
			seen |= fReward
			if err := s.kind("reward", '0'); err != nil {
				return err
			}
			f, err := s.num("reward")
			r.Reward = f
			return err
		case "terminal":
			if seen&fTerminal != 0 {
				return dup("terminal")
			}
			seen |= fTerminal
			if err := s.kind("terminal", 'b'); err != nil {
				return err
			}
			c, err := s.lit()
			r.Terminal = c == 't'
			return err
		}
		return unknown(k)
	})
	if err == nil {
		err = s.end()
	}
	if err == nil {
		switch {
		case seen&fSession == 0:
			err = missing("session")
		case seen&fReward == 0:
			err = missing("reward")
		case seen&fTerminal == 0:
			err = missing("terminal")
		}
	}
	if err != nil {
		return EndRequest{}, err
	}
	return r, nil
}

// DecodePolicy decodes and validates a policy announcement: all fields
// required, epsilon >= 0, 0 <= delta < 1.
func DecodePolicy(data []byte, lim Limits) (PolicyAnnouncement, error) {
	lim = lim.withDefaults()
	var p PolicyAnnouncement
	if err := checkSize(data, lim); err != nil {
		return p, err
	}
	s := scanner{data: data}
	seen := 0
	err := s.object(func(k []byte) *Error {
		var bit int
		var dst *float64
		switch string(k) {
		case "version":
			bit = 1
		case "epsilon":
			bit, dst = 2, &p.Epsilon
		case "delta":
			bit, dst = 4, &p.Delta
		default:
			return unknown(k)
		}
		if seen&bit != 0 {
			return dup(string(k))
		}
		seen |= bit
		f := string(k)
		if err := s.kind(f, '0'); err != nil {
			return err
		}
		if dst == nil {
			start := s.pos
			if _, err := s.num(f); err != nil {
				return err
			}
			v, err := strconv.ParseUint(string(s.data[start:s.pos]), 10, 64)
			if err != nil {
				return newErr(CodeWrongType, "version: not an unsigned integer")
			}
			p.Version = v
			return nil
		}
		v, err := s.num(f)
		*dst = v
		return err
	})
	if err == nil {
		err = s.end()
	}
	if err == nil {
		switch {
		case seen&1 == 0:
			err = missing("version")
		case seen&2 == 0:
			err = missing("epsilon")
		case seen&4 == 0:
			err = missing("delta")
		case p.Epsilon < 0:
			err = newErr(CodeBadRequest, "epsilon: negative")
		case p.Delta < 0 || p.Delta >= 1:
			err = newErr(CodeBadRequest, "delta: outside [0, 1)")
		}
	}
	if err != nil {
		return PolicyAnnouncement{}, err
	}
	return p, nil
}

func appendFloat(dst []byte, field string, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, newErr(CodeNonFinite, field)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64), nil
}

func appendFloats(dst []byte, field string, v []float64) ([]byte, error) {
	dst = append(dst, '[')
	for i, f := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendFloat(dst, field, f); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// AppendActReply appends the JSON encoding of r to dst. It fails with
// ErrNonFinite on a NaN or infinite action component.
func AppendActReply(dst []byte, r ActReply) ([]byte, error) {
	dst = append(dst, `{"action":`...)
	var err error
	if r.Action.Vec != nil {
		if dst, err = appendFloats(dst, "action", r.Action.Vec); err != nil {
			return dst, err
		}
	} else {
		dst = strconv.AppendInt(dst, int64(r.Action.Index), 10)
	}
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendUint(dst, r.Version, 10)
	dst = append(dst, `,"step":`...)
	dst = strconv.AppendInt(dst, int64(r.Step), 10)
	return append(dst, '}'), nil
}

// EncodeActReply returns the JSON encoding of r in a new slice.
func EncodeActReply(r ActReply) ([]byte, error) { return AppendActReply(nil, r) }

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, "\\ufffd"...)
		} else {
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return append(dst, '"')
}

// AppendActRequest appends the JSON encoding of r to dst (the client's
// encoder). It fails with ErrNonFinite on a NaN or infinite number.
func AppendActRequest(dst []byte, r ActRequest) ([]byte, error) {
	dst = append(dst, `{"session":`...)
	dst = appendString(dst, r.Session)
	if r.User != "" { // anonymous sessions omit the user id
		dst = append(dst, `,"user":`...)
		dst = appendString(dst, r.User)
	}
	dst = append(dst, `,"obs":`...)
	var err error
	if dst, err = appendFloats(dst, "obs", r.Obs); err != nil {
		return dst, err
	}
	if r.Reward != nil {
		dst = append(dst, `,"reward":`...)
		if dst, err = appendFloat(dst, "reward", *r.Reward); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// AppendEndRequest appends the JSON encoding of r to dst (user omitted
// when empty).
func AppendEndRequest(dst []byte, r EndRequest) ([]byte, error) {
	dst = append(dst, `{"session":`...)
	dst = appendString(dst, r.Session)
	if r.User != "" {
		dst = append(dst, `,"user":`...)
		dst = appendString(dst, r.User)
	}
	dst = append(dst, `,"reward":`...)
	var err error
	if dst, err = appendFloat(dst, "reward", r.Reward); err != nil {
		return dst, err
	}
	dst = append(dst, `,"terminal":`...)
	dst = strconv.AppendBool(dst, r.Terminal)
	return append(dst, '}'), nil
}

// EncodePolicy returns the JSON encoding of p.
func EncodePolicy(p PolicyAnnouncement) ([]byte, error) {
	b := append([]byte(nil), `{"version":`...)
	b = strconv.AppendUint(b, p.Version, 10)
	b = append(b, `,"epsilon":`...)
	var err error
	if b, err = appendFloat(b, "epsilon", p.Epsilon); err != nil {
		return nil, err
	}
	b = append(b, `,"delta":`...)
	if b, err = appendFloat(b, "delta", p.Delta); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// AppendError appends the error body {"error":{"code":..,"message":..}}.
func AppendError(dst []byte, e *Error) []byte {
	dst = append(dst, `{"error":{"code":`...)
	dst = appendString(dst, string(e.Code))
	dst = append(dst, `,"message":`...)
	dst = appendString(dst, e.Message)
	return append(dst, `}}`...)
}

// wireReply is the client's view of any reply: an error body or a result.
// Replies are decoded leniently (unknown fields ignored) so that a v1 client
// keeps working with a newer agent.
type wireReply struct {
	Error *struct {
		Code    Code   `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Action  json.RawMessage `json:"action"`
	Version uint64          `json:"version"`
	Step    int             `json:"step"`
	OK      bool            `json:"ok"`
	Used    bool            `json:"used"`
	Reason  string          `json:"reason"`
}

func decodeReply(data []byte) (wireReply, error) {
	var w wireReply
	if err := json.Unmarshal(data, &w); err != nil {
		return w, newErr(CodeBadRequest, "reply: "+err.Error())
	}
	if w.Error != nil {
		if w.Error.Code == "" {
			w.Error.Code = CodeInternal
		}
		return w, &Error{Code: w.Error.Code, Message: w.Error.Message}
	}
	return w, nil
}

// DecodeActReply decodes an act reply; an error body becomes an *Error.
func DecodeActReply(data []byte) (ActReply, error) {
	if r, ok := fastActReply(data); ok {
		return r, nil
	}
	w, err := decodeReply(data)
	if err != nil {
		return ActReply{}, err
	}
	r := ActReply{Version: w.Version, Step: w.Step}
	a := w.Action
	for len(a) > 0 && isSpace(a[0]) {
		a = a[1:]
	}
	switch {
	case len(a) == 0:
		return ActReply{}, missing("reply: action")
	case a[0] == '[':
		r.Action.Vec = []float64{}
		if err := json.Unmarshal(a, &r.Action.Vec); err != nil {
			return ActReply{}, newErr(CodeWrongType, "reply: action: "+err.Error())
		}
	default:
		if err := json.Unmarshal(a, &r.Action.Index); err != nil {
			return ActReply{}, newErr(CodeWrongType, "reply: action: "+err.Error())
		}
	}
	return r, nil
}

// DecodeEndReply decodes an end reply; an error body becomes an *Error.
func DecodeEndReply(data []byte) (EndReply, error) {
	w, err := decodeReply(data)
	if err != nil {
		return EndReply{}, err
	}
	return EndReply{OK: w.OK, Used: w.Used, Reason: w.Reason}, nil
}

// MarshalJSON encodes r as protocol v1 does.
func (r ActReply) MarshalJSON() ([]byte, error) { return EncodeActReply(r) }

// UnmarshalJSON decodes r as DecodeActReply does.
func (r *ActReply) UnmarshalJSON(b []byte) error {
	v, err := DecodeActReply(b)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// fastActReply decodes the exact reply shape AppendActReply writes without
// reflection; anything else falls back to the lenient path.
func fastActReply(data []byte) (ActReply, bool) {
	var r ActReply
	s := scanner{data: data}
	seen := 0
	err := s.object(func(k []byte) *Error {
		switch string(k) {
		case "action":
			seen |= 1
			if s.peek() == '[' {
				var err *Error
				r.Action.Vec, err = s.floats(make([]float64, 0, 4), "action", 1<<16)
				return err
			}
			return s.uint(func(v uint64) { r.Action.Index = int(v) }, math.MaxInt)
		case "version":
			seen |= 2
			return s.uint(func(v uint64) { r.Version = v }, math.MaxUint64)
		case "step":
			seen |= 4
			return s.uint(func(v uint64) { r.Step = int(v) }, math.MaxInt)
		}
		return ErrUnknownField
	})
	if err != nil || s.end() != nil || seen != 7 {
		return ActReply{}, false
	}
	return r, true
}
