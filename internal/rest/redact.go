package rest

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Config, TLSConfig, ExecConfig and ExecEnvVar describe themselves as a
// list of fields in which every credential is replaced by "[redacted]" and
// certificate data by its size. That one list feeds fmt (String, GoString
// and Format, so that every verb is covered, %d and %x included), log/slog
// (LogValue) and encoding/json (MarshalJSON). Empty fields are left out.

const redactedText = "[redacted]"

type field struct {
	name  string
	value any // string, bool, time.Duration, []string, []field, secret, size
}

// secret stands for a credential that is set.
type secret struct{}

// size stands for non-secret bytes (certificates) that are not shown.
type size int

type fieldList []field

func (l *fieldList) str(name, v string) {
	if v != "" {
		*l = append(*l, field{name, v})
	}
}

func (l *fieldList) secret(name string, set bool) {
	if set {
		*l = append(*l, field{name, secret{}})
	}
}

func (l *fieldList) bytes(name string, v []byte) {
	if len(v) > 0 {
		*l = append(*l, field{name, size(len(v))})
	}
}

func (l *fieldList) flag(name string, v bool) {
	if v {
		*l = append(*l, field{name, true})
	}
}

func (l *fieldList) duration(name string, v time.Duration) {
	if v != 0 {
		*l = append(*l, field{name, v})
	}
}

func (l *fieldList) group(name string, v fieldList) {
	if len(v) > 0 {
		*l = append(*l, field{name, []field(v)})
	}
}

// redactURL hides a URL's user info, the user name as well as the password
// (a proxy URL may carry a token as its user name); a URL that does not
// parse is hidden whole, since it might be anything. So is what comes
// before the last '@' of one that parses without a host: written without
// its scheme, "user:password@proxy:3128" parses as the scheme "user" and
// the opaque "password@proxy:3128", and "token@proxy" as a path, neither
// with user info for url.URL.Redacted to hide.
func redactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return redactedText + " (invalid URL)"
	}
	if i := strings.LastIndexByte(raw, '@'); i >= 0 && u.User == nil && u.Host == "" {
		return "xxxxx" + raw[i:]
	}
	return withoutUserInfo(u)
}

// withoutUserInfo is u.Redacted() that hides the user name too.
func withoutUserInfo(u *url.URL) string {
	if u == nil || u.User == nil {
		return u.Redacted()
	}
	c := *u
	c.User = url.User("xxxxx")
	return c.String()
}

func (c Config) fields() fieldList {
	var l fieldList
	l.str("Host", redactURL(c.Host))
	l.str("Namespace", c.Namespace)
	l.secret("BearerToken", c.BearerToken != "")
	l.str("BearerTokenFile", c.BearerTokenFile)
	l.str("Username", c.Username)
	l.secret("Password", c.Password != "")
	l.group("TLS", c.TLS.fields())
	if c.Exec != nil {
		l = append(l, field{"Exec", []field(c.Exec.fields())})
	}
	l.group("Impersonate", c.Impersonate.fields())
	l.flag("AllowBearerOverHTTP", c.AllowBearerOverHTTP)
	l.str("ProxyURL", redactURL(c.ProxyURL))
	l.flag("DisableCompression", c.DisableCompression)
	l.str("UserAgent", c.UserAgent)
	l.duration("Timeout", c.Timeout)
	l.flag("DisableHTTP2", c.DisableHTTP2)
	l.duration("HTTP2ReadIdleTimeout", c.HTTP2ReadIdleTimeout)
	l.duration("HTTP2PingTimeout", c.HTTP2PingTimeout)
	l.duration("DialTimeout", c.DialTimeout)
	l.duration("DialKeepAlive", c.DialKeepAlive)
	l.duration("TCPUserTimeout", c.TCPUserTimeout)
	return l
}

func (i ImpersonationConfig) fields() fieldList {
	var l fieldList
	l.str("UserName", i.UserName)
	l.str("UID", i.UID)
	if len(i.Groups) > 0 {
		l = append(l, field{"Groups", i.Groups})
	}
	if len(i.Extra) > 0 {
		l = append(l, field{"Extra", fmt.Sprint(i.Extra)})
	}
	return l
}

func (t TLSConfig) fields() fieldList {
	var l fieldList
	l.bytes("CAData", t.CAData)
	l.str("CAFile", t.CAFile)
	l.bytes("CertData", t.CertData)
	l.str("CertFile", t.CertFile)
	l.secret("KeyData", len(t.KeyData) > 0)
	l.str("KeyFile", t.KeyFile)
	l.str("ServerName", t.ServerName)
	l.flag("Insecure", t.Insecure)
	return l
}

func (e ExecConfig) fields() fieldList {
	var l fieldList
	l.str("Command", e.Command)
	// Arguments may hold secrets (an OIDC client secret, say): redacted,
	// as client-go does.
	l.secret("Args", len(e.Args) > 0)
	if len(e.Env) > 0 {
		var env fieldList
		for _, v := range e.Env {
			env = append(env, field{v.Name, secret{}})
		}
		l = append(l, field{"Env", []field(env)})
	}
	l.str("APIVersion", e.APIVersion)
	l.str("InstallHint", e.InstallHint)
	l.flag("ProvideClusterInfo", e.ProvideClusterInfo)
	l.secret("ClusterConfig", len(e.ClusterConfig) > 0)
	l.str("InteractiveMode", e.InteractiveMode)
	return l
}

func (v ExecEnvVar) fields() fieldList {
	var l fieldList
	l.str("Name", v.Name)
	l.secret("Value", v.Value != "")
	return l
}

// text renders fields as {Name: value, ...}.
func (l fieldList) text() string {
	var b strings.Builder
	l.writeText(&b)
	return b.String()
}

func (l fieldList) writeText(b *strings.Builder) {
	b.WriteByte('{')
	for i, f := range l {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.name)
		b.WriteString(": ")
		switch v := f.value.(type) {
		case string:
			b.WriteString(strconv.Quote(v))
		case []string:
			fmt.Fprintf(b, "%q", v)
		case []field:
			fieldList(v).writeText(b)
		case secret:
			b.WriteString(redactedText)
		case size:
			fmt.Fprintf(b, "%d bytes", int(v))
		default:
			fmt.Fprint(b, v)
		}
	}
	b.WriteByte('}')
}

func (l fieldList) attrs() []slog.Attr {
	attrs := make([]slog.Attr, 0, len(l))
	for _, f := range l {
		switch v := f.value.(type) {
		case []field:
			attrs = append(attrs, slog.Attr{Key: f.name, Value: slog.GroupValue(fieldList(v).attrs()...)})
		case secret:
			attrs = append(attrs, slog.String(f.name, redactedText))
		case size:
			attrs = append(attrs, slog.String(f.name, fmt.Sprintf("%d bytes", int(v))))
		default:
			attrs = append(attrs, slog.Any(f.name, v))
		}
	}
	return attrs
}

func (l fieldList) json() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range l {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(f.name)
		b.Write(name)
		b.WriteByte(':')
		var value []byte
		var err error
		switch v := f.value.(type) {
		case []field:
			value, err = fieldList(v).json()
		case secret:
			value, err = json.Marshal(redactedText)
		case size:
			value, err = json.Marshal(fmt.Sprintf("%d bytes", int(v)))
		case time.Duration:
			value, err = json.Marshal(v.String())
		default:
			value, err = json.Marshal(v)
		}
		if err != nil {
			return nil, err
		}
		b.Write(value)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// format serves fmt.Formatter: %#v gets the Go-syntax-like form, every
// other verb the plain one.
func format(s fmt.State, verb rune, typeName string, l fieldList) {
	if verb == 'v' && s.Flag('#') {
		_, _ = io.WriteString(s, typeName+l.text())
		return
	}
	_, _ = io.WriteString(s, l.text())
}

// String describes the Config with every credential redacted.
func (c Config) String() string { return c.fields().text() }

// GoString is the %#v form, with every credential redacted too.
func (c Config) GoString() string { return "rest.Config" + c.fields().text() }

// Format implements fmt.Formatter so that no verb shows a credential.
func (c Config) Format(s fmt.State, verb rune) { format(s, verb, "rest.Config", c.fields()) }

// LogValue implements slog.LogValuer: a group of the set fields, with every
// credential redacted.
func (c Config) LogValue() slog.Value { return slog.GroupValue(c.fields().attrs()...) }

// MarshalJSON encodes the set fields with every credential redacted; it is
// meant for logs and debugging, and there is no matching UnmarshalJSON.
func (c Config) MarshalJSON() ([]byte, error) { return c.fields().json() }

// String describes the TLSConfig with KeyData redacted.
func (t TLSConfig) String() string { return t.fields().text() }

// GoString is the %#v form, redacted too.
func (t TLSConfig) GoString() string { return "rest.TLSConfig" + t.fields().text() }

// Format implements fmt.Formatter so that no verb shows KeyData.
func (t TLSConfig) Format(s fmt.State, verb rune) { format(s, verb, "rest.TLSConfig", t.fields()) }

// LogValue implements slog.LogValuer with KeyData redacted.
func (t TLSConfig) LogValue() slog.Value { return slog.GroupValue(t.fields().attrs()...) }

// MarshalJSON encodes the set fields with KeyData redacted.
func (t TLSConfig) MarshalJSON() ([]byte, error) { return t.fields().json() }

// String describes the ExecConfig with the environment's values redacted.
func (e ExecConfig) String() string { return e.fields().text() }

// GoString is the %#v form, redacted too.
func (e ExecConfig) GoString() string { return "rest.ExecConfig" + e.fields().text() }

// Format implements fmt.Formatter so that no verb shows an environment value.
func (e ExecConfig) Format(s fmt.State, verb rune) { format(s, verb, "rest.ExecConfig", e.fields()) }

// LogValue implements slog.LogValuer with the environment's values redacted.
func (e ExecConfig) LogValue() slog.Value { return slog.GroupValue(e.fields().attrs()...) }

// MarshalJSON encodes the set fields with the environment's values redacted.
func (e ExecConfig) MarshalJSON() ([]byte, error) { return e.fields().json() }

// String describes the variable with its value redacted.
func (v ExecEnvVar) String() string { return v.fields().text() }

// GoString is the %#v form, redacted too.
func (v ExecEnvVar) GoString() string { return "rest.ExecEnvVar" + v.fields().text() }

// Format implements fmt.Formatter so that no verb shows the value.
func (v ExecEnvVar) Format(s fmt.State, verb rune) { format(s, verb, "rest.ExecEnvVar", v.fields()) }

// LogValue implements slog.LogValuer with the value redacted.
func (v ExecEnvVar) LogValue() slog.Value { return slog.GroupValue(v.fields().attrs()...) }

// MarshalJSON encodes the name with the value redacted.
func (v ExecEnvVar) MarshalJSON() ([]byte, error) { return v.fields().json() }
