package stream

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// The checks below let a command validate its settings before it starts
// anything: they read and parse files but never dial, resolve or bind.

// CheckServerURL reports whether u is a server URL Connect can use: one
// URL, or several separated by commas (a cluster), each with the scheme
// nats, tls, ws or wss, a host and, if it gives one, a port from 1 to
// 65535.
func CheckServerURL(u string) error {
	if strings.TrimSpace(u) == "" {
		return errors.New("empty server URL")
	}
	for _, one := range strings.Split(u, ",") {
		one = strings.TrimSpace(one)
		scheme, _, ok := strings.Cut(one, "://")
		switch strings.ToLower(scheme) {
		case "nats", "tls", "ws", "wss":
		default:
			ok = false
		}
		if !ok {
			return fmt.Errorf("%q: want a nats://, tls://, ws:// or wss:// URL such as nats://HOST:4222", one)
		}
		p, err := url.Parse(one)
		if err != nil {
			return err
		}
		if err := checkHost(p.Hostname()); err != nil || p.Hostname() == "" {
			return fmt.Errorf("%q: want a host (nats://HOST:4222)", one)
		}
		if port := p.Port(); port != "" {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("%q: port %q, want 1 to 65535", one, port)
			}
		}
	}
	return nil
}

// CheckListenAddr reports whether addr is host:port a server can listen
// on: a port from 0 (any free port) to 65535, and a host that is empty
// (every interface), an IP address or a host name.
func CheckListenAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: want HOST:PORT, e.g. 127.0.0.1:9090 (%w)", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port %q, want 0 (any free port) to 65535", addr, port)
	}
	if host == "" {
		return nil
	}
	if err := checkHost(host); err != nil {
		return fmt.Errorf("%q: %w", addr, err)
	}
	return nil
}

// checkHost accepts an IP address (with a zone) or a host name: dot-
// separated labels of 1 to 63 letters, digits, '-' or '_', not starting
// or ending with '-', 253 characters at most.
func checkHost(h string) error {
	if _, err := netip.ParseAddr(h); err == nil {
		return nil
	}
	bad := fmt.Errorf("host %q: want an IP address or a host name", h)
	if len(h) == 0 || len(h) > 253 {
		return bad
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return bad
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return bad
			}
		}
	}
	return nil
}

// CheckCAFile reads a CA file (WithTLS's caFile): it must hold at least
// one PEM certificate.
func CheckCAFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return fmt.Errorf("%s: no PEM certificate", path)
	}
	return nil
}

// CheckKeyPair loads a certificate and its key (WithTLS's certFile and
// keyFile): both PEM, the key matching the certificate.
func CheckKeyPair(certFile, keyFile string) error {
	if certFile == "" || keyFile == "" {
		return errors.New("a certificate needs its key and a key its certificate")
	}
	_, err := tls.LoadX509KeyPair(certFile, keyFile)
	return err
}

// CheckCredsFile reads a NATS credentials file (WithCredentials): a user
// JWT and the user's nkey seed.
func CheckCredsFile(path string) error {
	if strings.HasPrefix(path, "~/") { // as nats.go reads it
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, path[2:])
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	tok, err := nkeys.ParseDecoratedJWT(b)
	if err == nil {
		_, err = jwt.DecodeUserClaims(tok)
	}
	if err != nil {
		return fmt.Errorf("%s: no user JWT: %w", path, err)
	}
	if _, err := nkeys.ParseDecoratedUserNKey(b); err != nil {
		return fmt.Errorf("%s: no user nkey seed: %w", path, err)
	}
	return nil
}

// CheckNKeyFile reads an nkey seed file (WithNKey): it must hold a user
// seed.
func CheckNKeyFile(path string) error {
	_, err := nats.NkeyOptionFromSeed(path)
	return err
}

// IsLoopbackHost reports whether host names the loopback interface only.
// Any other name, the empty host and the unspecified addresses (0.0.0.0,
// ::) are not loopback.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
