package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"
)

// secretConfig sets every credential to a value containing "SECRET".
func secretConfig() Config {
	return Config{
		Host:            "https://user:SECRET-host-password@k.example:6443",
		Namespace:       "ns",
		BearerToken:     "SECRET-token",
		BearerTokenFile: "/var/run/token",
		Username:        "admin",
		Password:        "SECRET-password",
		TLS: TLSConfig{
			CAData:     []byte("-----BEGIN CERTIFICATE-----"),
			CertData:   []byte("-----BEGIN CERTIFICATE-----"),
			KeyData:    []byte("SECRET-key"),
			ServerName: "k",
		},
		Exec: &ExecConfig{
			Command:    "aws",
			Args:       []string{"eks", "get-token"},
			Env:        []ExecEnvVar{{Name: "AWS_PROFILE", Value: "SECRET-env"}},
			APIVersion: ExecAPIVersionV1,
		},
		ProxyURL: "http://proxyuser:SECRET-proxy-password@proxy:3128",
		Timeout:  30 * time.Second,
	}
}

func TestConfigFormattingRedactsCredentials(t *testing.T) {
	cfg := secretConfig()
	exec := *cfg.Exec
	values := map[string]any{
		"Config":         cfg,
		"*Config":        &cfg,
		"TLSConfig":      cfg.TLS,
		"*TLSConfig":     &cfg.TLS,
		"ExecConfig":     exec,
		"*ExecConfig":    &exec,
		"ExecEnvVar":     exec.Env[0],
		"[]ExecEnvVar":   exec.Env,
		"nested":         struct{ Cfg Config }{cfg},
		"nested pointer": struct{ Cfg *Config }{&cfg},
		"slice":          []Config{cfg},
		"map":            map[string]*Config{"a": &cfg},
	}
	for name, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%x", "%X", "%T %v"} {
			if out := fmt.Sprintf(verb, v); strings.Contains(out, "SECRET") {
				t.Errorf("%s with %s shows a secret: %s", name, verb, out)
			}
		}
		if out := fmt.Sprint(v); strings.Contains(out, "SECRET") {
			t.Errorf("%s with Sprint shows a secret: %s", name, out)
		}
		data, err := json.Marshal(v)
		if err != nil {
			t.Errorf("%s: json.Marshal: %v", name, err)
		} else if bytes.Contains(data, []byte("SECRET")) {
			t.Errorf("%s: JSON shows a secret: %s", name, data)
		}
		for _, h := range []func(*bytes.Buffer) slog.Handler{
			func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
			func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		} {
			var buf bytes.Buffer
			slog.New(h(&buf)).Info("config", "value", v)
			if strings.Contains(buf.String(), "SECRET") {
				t.Errorf("%s: slog shows a secret: %s", name, buf.String())
			}
		}
	}
}

func TestConfigStringShowsWhatIsSafe(t *testing.T) {
	cfg := secretConfig()
	got := cfg.String()
	want := `{Host: "https://xxxxx@k.example:6443", Namespace: "ns", BearerToken: [redacted], ` +
		`BearerTokenFile: "/var/run/token", Username: "admin", Password: [redacted], ` +
		`TLS: {CAData: 27 bytes, CertData: 27 bytes, KeyData: [redacted], ServerName: "k"}, ` +
		`Exec: {Command: "aws", Args: [redacted], Env: {AWS_PROFILE: [redacted]}, APIVersion: "client.authentication.k8s.io/v1"}, ` +
		`ProxyURL: "http://xxxxx@proxy:3128", Timeout: 30s}`
	if got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}
	if gs := cfg.GoString(); gs != "rest.Config"+want {
		t.Errorf("GoString() = %s", gs)
	}
	if s := fmt.Sprintf("%#v", cfg); s != "rest.Config"+want {
		t.Errorf("%%#v = %s", s)
	}
	if s := (Config{}).String(); s != "{}" {
		t.Errorf("zero Config: %s", s)
	}
	if s := (Config{Host: "::bad"}).String(); !strings.Contains(s, "[redacted] (invalid URL)") {
		t.Errorf("unparseable Host: %s", s)
	}
}

// Every field of Config, TLSConfig and ExecConfig shows up in the
// description when set: a field added without updating fields() fails here.
func TestConfigDescriptionCoversEveryField(t *testing.T) {
	check := func(typ reflect.Type, describe func(v reflect.Value) string) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			v := reflect.New(typ).Elem()
			fv := v.Field(i)
			switch fv.Kind() {
			case reflect.String:
				fv.SetString("x")
			case reflect.Bool:
				fv.SetBool(true)
			case reflect.Int64:
				fv.SetInt(int64(time.Second))
			case reflect.Slice:
				fv.Set(reflect.MakeSlice(fv.Type(), 1, 1))
				if fv.Index(0).Kind() == reflect.Uint8 {
					fv.Index(0).SetUint('x')
				}
			case reflect.Pointer:
				fv.Set(reflect.New(fv.Type().Elem()))
			case reflect.Struct:
				if f0 := fv.Field(0); f0.Kind() == reflect.String {
					f0.SetString("x")
				} else {
					f0.Set(reflect.ValueOf([]byte("x")))
				}
			case reflect.Map:
				fv.Set(reflect.MakeMap(fv.Type()))
				fv.SetMapIndex(reflect.ValueOf("k"), reflect.Zero(fv.Type().Elem()))
			default:
				t.Fatalf("%s.%s: kind %s not handled by the test", typ.Name(), f.Name, fv.Kind())
			}
			if out := describe(v); !strings.Contains(out, f.Name+":") {
				t.Errorf("%s.%s is missing from %s", typ.Name(), f.Name, out)
			}
		}
	}
	check(reflect.TypeFor[Config](), func(v reflect.Value) string { return v.Interface().(Config).String() })
	check(reflect.TypeFor[ImpersonationConfig](), func(v reflect.Value) string {
		return Config{Impersonate: v.Interface().(ImpersonationConfig)}.String()
	})
	check(reflect.TypeFor[TLSConfig](), func(v reflect.Value) string { return v.Interface().(TLSConfig).String() })
	check(reflect.TypeFor[ExecConfig](), func(v reflect.Value) string {
		e := v.Interface().(ExecConfig)
		if len(e.Env) > 0 {
			e.Env[0].Name = "Env" // an entry shows as its name
		}
		return e.String()
	})
}

// TestURLWithoutSchemeKeepsItsUserInfoHidden: a Host, proxy URL or
// kubeconfig server written without its scheme parses with its user info
// in the scheme and opaque part, or in the path, where url.URL.Redacted
// does not look: the errors that quote the URL, and the Config's
// description, showed the password or token.
func TestURLWithoutSchemeKeepsItsUserInfoHidden(t *testing.T) {
	for _, raw := range []string{
		"alice:SECRET@proxy.corp:3128",
		"SECRET@proxy.corp",
		"SECRET@10.0.0.1:6443/k8s",
	} {
		if _, err := NewClient(&Config{Host: "https://k.example", ProxyURL: raw}); err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("ProxyURL %s: error %v", raw, err)
		}
		if _, err := NewClient(&Config{Host: raw}); err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("Host %s: error %v", raw, err)
		}
		if out := fmt.Sprint(Config{Host: raw, ProxyURL: raw}); strings.Contains(out, "SECRET") {
			t.Errorf("Config shows a secret: %s", out)
		}
		kc := &kubeconfig{
			currentContext: "c",
			contexts:       map[string]kubeContext{"c": {Cluster: "k"}},
			clusters:       map[string]kubeCluster{"k": {Server: raw}},
		}
		if _, err := kc.config(""); err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("kubeconfig server %s: error %v", raw, err)
		}
	}
	// A URL with a host keeps what follows it, '@' or not.
	if got, want := redactURL("https://k.example/a@b"), "https://k.example/a@b"; got != want {
		t.Errorf("redactURL = %s, want %s", got, want)
	}
}
