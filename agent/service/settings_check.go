package service

import (
	"errors"

	"dprl/policy"
	"dprl/stream"
)

// MaxObsDim and MaxActions bound Settings.ObsDim and Settings.Actions. An
// act request of MaxObsDim values fits the wire protocol's default message
// limit of 64 KiB (stream.DefaultLimits) whatever the values: a float64
// takes at most 25 bytes in JSON, with room left for the ids. Past 4096
// actions a typo is likelier than a policy over them.
const (
	MaxObsDim  = 2048
	MaxActions = 4096
)

// given reports whether field was set: explicitly (Explicit), or to a
// value that is not its zero.
func (s Settings) given(field string, nonZero bool) bool {
	return nonZero || s.Explicit != nil && s.Explicit(field)
}

// spaces returns the discrete spec of ObsDim and Actions, checked.
func (s Settings) spaces() (policy.Spec, error) {
	var errs []error
	if s.ObsDim < 1 || s.ObsDim > MaxObsDim {
		errs = append(errs, SettingsFields.Errorf("{ObsDim} %d: want 1 to %d (an act request of that many values fits the wire protocol's 64 KiB)", s.ObsDim, MaxObsDim))
	}
	if s.Actions < 2 || s.Actions > MaxActions {
		errs = append(errs, SettingsFields.Errorf("{Actions} %d: want 2 to %d", s.Actions, MaxActions))
	}
	return policy.Spec{ObsDim: s.ObsDim, Kind: policy.ActionDiscrete, NumActions: s.Actions}, errors.Join(errs...)
}

// checkTransport checks the NATS settings and the HTTP address without
// dialling, resolving or binding anything: the external server's URL and
// the agent's credential files for it (read and parsed), or the embedded
// server's listen address.
func (s Settings) checkTransport(embedded bool) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	if embedded && s.NATSListen != "" {
		if err := stream.CheckListenAddr(s.NATSListen); err != nil {
			add(SettingsFields.Errorf("{NATSListen} %w", err))
		}
	}
	if !embedded {
		if err := stream.CheckServerURL(s.NATS); err != nil {
			add(SettingsFields.Errorf("{NATS} %w (or \"embedded\")", err))
		}
	}
	if s.HTTPAddr != "" {
		if err := stream.CheckListenAddr(s.HTTPAddr); err != nil {
			add(SettingsFields.Errorf("{HTTPAddr} %w", err))
		}
	}
	for _, f := range []struct {
		field, path string
		check       func(string) error
	}{{"TLSCA", s.TLSCA, stream.CheckCAFile}, {"Creds", s.Creds, stream.CheckCredsFile}, {"NKey", s.NKey, stream.CheckNKeyFile}} {
		if f.path != "" {
			if err := f.check(f.path); err != nil {
				add(SettingsFields.Errorf("{"+f.field+"} %s: %w", f.path, err))
			}
		}
	}
	if s.TLSCert != "" || s.TLSKey != "" {
		if err := stream.CheckKeyPair(s.TLSCert, s.TLSKey); err != nil {
			add(SettingsFields.Errorf("{TLSCert}/{TLSKey}: %w", err))
		}
	}
	return errors.Join(errs...)
}
