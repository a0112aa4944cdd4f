package stream

import (
	"errors"
	"math"
	"testing"
	"unicode"
	"unicode/utf8"
)

var actSeeds = []string{
	`{"session":"s1","user":"u1","obs":[1,2,3],"reward":0.5}`,
	`{"session":"s1","user":"u1","obs":[1,2,3]}`,
	` { "obs" : [ -0.0 , 1e-3 , 2E+2 ] , "user" : "\u00e9" , "session" : "a\"b" } `,
	`{"session":"s1","user":"u1","obs":[1,2,3],"reward":null}`,
	`{"session":"s1","user":"u1","obs":[1,2,1e400]}`,
	`{"session":"s1","user":"u1","obs":[1,2]}`,
	`{"session":"","user":"u1","obs":[1,2,3]}`,
	`{"session":"s1","user":"u1","obs":[1,2,3],"x":1}`,
	`{"session":"s1","session":"s1","user":"u1","obs":[1,2,3]}`,
	`{"session":"\ud83d\ude00","user":"\ud800","obs":[1,2,3]}`,
	`{"session":"s1","user":"u1","obs":[1,2,3]}]`,
	`{"session":"s1","user":"u1","obs":[01,2,3]}`,
	`{"session":"s1\u0000","user":"u1","obs":[1,2,3]}`,
	`[]`, `{}`, `"`, `{"`, `{"session":`, `-`, `1e`,
}

var endSeeds = []string{
	`{"session":"s1","reward":1,"terminal":true}`,
	`{"session":"s1","reward":-1.5e-7,"terminal":false}`,
	`{"session":"s1","reward":1,"terminal":tru}`,
	`{"session":"s1","reward":1e999,"terminal":true}`,
	`{"session":"s1","reward":1}`,
	`{"session":"s1","reward":"1","terminal":true}`,
	`{"session":"s1","reward":1,"terminal":true,"terminal":true}`,
	`{"session":"s1","reward":1,"terminal":null}`,
	`{}`, `{`, ``,
}

// checkErr fails unless err is nil or an *Error with a registered code.
func checkErr(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error without code: %v", err)
	}
	for _, c := range Codes() {
		if c == e.Code {
			return
		}
	}
	t.Fatalf("unregistered code %q", e.Code)
}

func checkID(t *testing.T, s string, lim Limits) {
	t.Helper()
	if s == "" || len(s) > lim.MaxIDLen || !utf8.ValidString(s) {
		t.Fatalf("bad id accepted: %q", s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			t.Fatalf("control char accepted: %q", s)
		}
	}
}

func fuzzAct(t *testing.T, data []byte, dim int) {
	lim := Limits{MaxMessageBytes: 4096, MaxObsLen: 16, MaxIDLen: 32}
	r, err := DecodeAct(data, lim, dim)
	if err != nil {
		checkErr(t, err)
		return
	}
	checkID(t, r.Session, lim.withDefaults())
	checkID(t, r.User, lim.withDefaults())
	if len(r.Obs) == 0 || (dim > 0 && len(r.Obs) != dim) || len(r.Obs) > lim.MaxObsLen {
		t.Fatalf("obs length %d accepted", len(r.Obs))
	}
	for _, x := range r.Obs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			t.Fatal("non-finite accepted")
		}
	}
	// Re-encoding and decoding gives the same request.
	b, err := AppendActRequest(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := DecodeAct(b, Limits{MaxIDLen: 32}, dim)
	if err != nil || r2.Session != r.Session || r2.User != r.User || len(r2.Obs) != len(r.Obs) || (r.Reward == nil) != (r2.Reward == nil) {
		t.Fatalf("round trip %s: %+v %v", b, r2, err)
	}
}

func FuzzDecodeAct(f *testing.F) {
	for _, s := range actSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzAct(t, data, 3)
		fuzzAct(t, data, 0)
		// A message cut in two halves (a truncated or misrouted body) must
		// be rejected or valid, never crash.
		h := len(data) / 2
		fuzzAct(t, data[:h], 3)
		fuzzAct(t, data[h:], 3)
	})
}

func fuzzEnd(t *testing.T, data []byte) {
	lim := Limits{MaxIDLen: 32}
	r, err := DecodeEnd(data, lim)
	if err != nil {
		checkErr(t, err)
		return
	}
	checkID(t, r.Session, lim.withDefaults())
	if math.IsNaN(r.Reward) || math.IsInf(r.Reward, 0) {
		t.Fatal("non-finite reward accepted")
	}
	b, err := AppendEndRequest(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	if r2, err := DecodeEnd(b, lim); err != nil || r2 != r {
		t.Fatalf("round trip %s: %+v %v", b, r2, err)
	}
}

func FuzzDecodeEnd(f *testing.F) {
	for _, s := range endSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzEnd(t, data)
		h := len(data) / 2
		fuzzEnd(t, data[:h])
		fuzzEnd(t, data[h:])
	})
}

func FuzzDecodePolicy(f *testing.F) {
	for _, s := range []string{`{"version":18,"epsilon":0.5,"delta":1e-5}`, `{"version":-1,"epsilon":0.5,"delta":1e-5}`,
		`{"version":1.0,"epsilon":0.5,"delta":1}`, `{"version":18446744073709551616,"epsilon":0,"delta":0}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodePolicy(data, Limits{})
		if err != nil {
			checkErr(t, err)
			return
		}
		if !(p.Epsilon >= 0) || !(p.Delta >= 0 && p.Delta < 1) {
			t.Fatalf("invalid accepted: %+v", p)
		}
	})
}

// FuzzDecodeActReply: the client's reply decoder never panics.
func FuzzDecodeActReply(f *testing.F) {
	for _, s := range []string{`{"action":1,"version":2,"step":3}`, `{"action":[1,2],"version":2,"step":3}`,
		`{"error":{"code":"obs_dim","message":"m"}}`, `{"error":{}}`, `{"action":"x"}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		DecodeActReply(data)
		DecodeEndReply(data)
	})
}
