package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const fullKubeconfig = `apiVersion: v1
kind: Config
preferences: {}
current-context: prod
clusters:
- name: prod-cluster
  cluster:
    server: https://prod.example:6443
    certificate-authority-data: ` + "Q0EgREFUQQ==" + `
    tls-server-name: kubernetes.default
    proxy-url: socks5://proxy.example:1080
    disable-compression: true
- name: dev-cluster
  cluster:
    server: https://dev.example:6443
    insecure-skip-tls-verify: true
    extensions:
    - name: something
      extension: {a: b}
users:
- name: prod-user
  user:
    token: prod-token-value
- name: dev-user
  user:
    client-certificate-data: ` + "Q0VSVA==" + `
    client-key-data: ` + "S0VZ" + `
- name: basic-user
  user:
    username: admin
    password: hunter2
contexts:
- name: prod
  context:
    cluster: prod-cluster
    user: prod-user
    namespace: payments
- name: dev
  context:
    cluster: dev-cluster
    user: dev-user
- name: dev-basic
  context:
    cluster: dev-cluster
    user: basic-user
- name: anonymous
  context:
    cluster: dev-cluster
`

func TestLoadKubeconfigContexts(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), "config"), fullKubeconfig)
	tests := []struct {
		context string
		want    Config
	}{
		{"", Config{ // the current-context
			Host: "https://prod.example:6443", Namespace: "payments", BearerToken: "prod-token-value",
			TLS:      TLSConfig{CAData: []byte("CA DATA"), ServerName: "kubernetes.default"},
			ProxyURL: "socks5://proxy.example:1080", DisableCompression: true,
		}},
		{"dev", Config{ // no namespace: "default"
			Host: "https://dev.example:6443", Namespace: "default",
			TLS: TLSConfig{Insecure: true, CertData: []byte("CERT"), KeyData: []byte("KEY")},
		}},
		{"dev-basic", Config{
			Host: "https://dev.example:6443", Namespace: "default", Username: "admin", Password: "hunter2",
			TLS: TLSConfig{Insecure: true},
		}},
		{"anonymous", Config{Host: "https://dev.example:6443", Namespace: "default", TLS: TLSConfig{Insecure: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.context, func(t *testing.T) {
			got, err := LoadKubeconfig(path, tt.context)
			if err != nil {
				t.Fatal(err)
			}
			// Compare the raw fields: String would hide the secrets.
			if !reflect.DeepEqual(configFieldsOf(got), configFieldsOf(&tt.want)) {
				t.Errorf("got  %#v\nwant %#v", configFieldsOf(got), configFieldsOf(&tt.want))
			}
		})
	}
}

// configFields is Config without its methods, so that %#v shows
// everything (tests only).
type configFields Config

func configFieldsOf(c *Config) configFields { return configFields(*c) }

func TestLoadKubeconfigRelativePaths(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "sub", "config"), `
current-context: c
clusters:
- name: k
  cluster:
    server: https://k.example
    certificate-authority: certs/ca.crt
    extensions:
    - name: other.example/thing
      extension: {ignored: true}
    - name: client.authentication.k8s.io/exec
      extension:
        audience: my-audience
        regions: [eu-west-1]
        nested: {depth: 2}
users:
- name: u
  user:
    tokenFile: ../token
    client-certificate: certs/client.crt
    client-key: /abs/client.key
    exec:
      command: ./bin/plugin
      apiVersion: client.authentication.k8s.io/v1
      args: [get-token, --cluster, k]
      env:
      - name: PROFILE
        value: prod
      provideClusterInfo: true
      interactiveMode: Never
      installHint: run make
contexts:
- name: c
  context: {cluster: k, user: u}
`)
	cfg, err := LoadKubeconfig(path, "")
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if cfg.TLS.CAFile != filepath.Join(sub, "certs", "ca.crt") {
		t.Errorf("CAFile = %q", cfg.TLS.CAFile)
	}
	if cfg.BearerTokenFile != filepath.Join(dir, "token") {
		t.Errorf("BearerTokenFile = %q", cfg.BearerTokenFile)
	}
	if cfg.TLS.CertFile != filepath.Join(sub, "certs", "client.crt") || cfg.TLS.KeyFile != "/abs/client.key" {
		t.Errorf("CertFile, KeyFile = %q, %q", cfg.TLS.CertFile, cfg.TLS.KeyFile)
	}
	wantExec := &ExecConfig{
		Command:            filepath.Join(sub, "bin", "plugin"),
		Args:               []string{"get-token", "--cluster", "k"},
		Env:                []ExecEnvVar{{Name: "PROFILE", Value: "prod"}},
		APIVersion:         ExecAPIVersionV1,
		InstallHint:        "run make",
		ProvideClusterInfo: true,
		InteractiveMode:    "Never",
		// the cluster's configuration for exec plugins, as JSON
		ClusterConfig: json.RawMessage(`{"audience":"my-audience","nested":{"depth":2},"regions":["eu-west-1"]}`),
	}
	if !reflect.DeepEqual(cfg.Exec, wantExec) {
		t.Errorf("Exec = %+v\nwant   %+v", *cfg.Exec, *wantExec)
	}
}

func TestLoadKubeconfigPluginInPath(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), "config"), `
current-context: c
clusters: [{name: k, cluster: {server: "https://k.example"}}]
users: [{name: u, user: {exec: {command: aws, apiVersion: client.authentication.k8s.io/v1beta1}}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
`)
	cfg, err := LoadKubeconfig(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Exec.Command != "aws" {
		t.Errorf("Command = %q, want it left for a PATH lookup", cfg.Exec.Command)
	}
}

// The files of $KUBECONFIG merge: the first to define a name wins, missing
// files are skipped, and paths are relative to the file that holds them.
func TestLoadKubeconfigMergesKUBECONFIG(t *testing.T) {
	dir := t.TempDir()
	first := writeFile(t, filepath.Join(dir, "a", "config"), `
current-context: work
clusters:
- name: shared
  cluster: {server: "https://first.example"}
contexts:
- name: work
  context: {cluster: shared, user: me, namespace: first-ns}
`)
	second := writeFile(t, filepath.Join(dir, "b", "config"), `
current-context: other
clusters:
- name: shared
  cluster: {server: "https://second.example"}
- name: only-second
  cluster: {server: "https://only-second.example", certificate-authority: ca.crt}
users:
- name: me
  user: {tokenFile: token}
contexts:
- name: work
  context: {cluster: only-second, user: me, namespace: second-ns}
- name: other
  context: {cluster: only-second, user: me}
`)
	missing := filepath.Join(dir, "missing")
	env := map[string]string{"KUBECONFIG": strings.Join([]string{missing, first, "", second, first}, string(filepath.ListSeparator))}
	files, err := kubeconfigFiles("", func(k string) string { return env[k] }, noHome)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(files, []string{first, second}) {
		t.Fatalf("files = %q", files)
	}
	cfg, err := loadKubeconfigFiles(files, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://first.example" || cfg.Namespace != "first-ns" {
		t.Errorf("Host, Namespace = %q, %q; want the first file's", cfg.Host, cfg.Namespace)
	}
	if cfg.BearerTokenFile != filepath.Join(dir, "b", "token") {
		t.Errorf("BearerTokenFile = %q, want it relative to the second file", cfg.BearerTokenFile)
	}
	cfg, err = loadKubeconfigFiles(files, "other", true)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS.CAFile != filepath.Join(dir, "b", "ca.crt") {
		t.Errorf("CAFile = %q", cfg.TLS.CAFile)
	}
}

func noHome() (string, error) { return "", errors.New("no home") }

func TestKubeconfigFilesFallsBackToHome(t *testing.T) {
	home := t.TempDir()
	getenv := func(string) string { return "" }
	homeFn := func() (string, error) { return home, nil }
	if _, err := kubeconfigFiles("", getenv, homeFn); !errors.Is(err, ErrNoKubeconfig) {
		t.Errorf("no ~/.kube/config: err = %v, want ErrNoKubeconfig", err)
	}
	want := writeFile(t, filepath.Join(home, ".kube", "config"), "{}")
	files, err := kubeconfigFiles("", getenv, homeFn)
	if err != nil || len(files) != 1 || files[0] != want {
		t.Errorf("files = %q, %v; want %q", files, err, want)
	}
	if _, err := kubeconfigFiles("", getenv, noHome); !errors.Is(err, ErrNoKubeconfig) {
		t.Errorf("no home: err = %v, want ErrNoKubeconfig", err)
	}
	env := func(string) string { return filepath.Join(home, "nope") }
	if _, err := kubeconfigFiles("", env, homeFn); !errors.Is(err, ErrNoKubeconfig) || !strings.Contains(err.Error(), "$KUBECONFIG") {
		t.Errorf("KUBECONFIG of missing files: err = %v, want ErrNoKubeconfig naming $KUBECONFIG", err)
	}
}

func TestLoadKubeconfigErrors(t *testing.T) {
	dir := t.TempDir()
	const secret = "s3cr3t-t0ken"
	tests := []struct {
		name, content, context string
		want                   []string
	}{
		{"bad YAML", "clusters: [\n  - name: x\n  bad", "", []string{"invalid YAML"}},
		{"type error quoting a secret", "current-context: c\nclusters: []\ncontexts: " + secret + "\n", "", []string{"invalid YAML", "`...`"}},
		// A value holding backticks of its own: its end is the last one.
		{"type error quoting a secret with a backtick", "users: [{name: u, user: {exec: {command: p, args: ab`" + secret + "}}}]\n", "", []string{"invalid YAML", "`...` into []string"}},
		{"type error quoting a secret with a backtick and a newline", "users: [{name: u, user: {exec: {command: p, args: \"a`\\n" + secret + "\"}}}]\n", "", []string{"invalid YAML", "`...` into []string"}},
		{"no current context", "clusters: []", "", []string{"no current-context"}},
		{"context not found", fullKubeconfig, "staging", []string{`context "staging" not found`}},
		{"cluster missing", `
contexts: [{name: c, context: {cluster: gone, user: u}}]
users: [{name: u, user: {token: ` + secret + `}}]`, "c", []string{`context "c" refers to cluster "gone", which is not defined`}},
		{"user missing", `
clusters: [{name: k, cluster: {server: "https://k"}}]
contexts: [{name: c, context: {cluster: k, user: gone}}]`, "c", []string{`context "c" refers to user "gone", which is not defined`}},
		{"no cluster in context", `contexts: [{name: c, context: {user: u}}]`, "c", []string{`context "c" names no cluster`}},
		{"no server", `
clusters: [{name: k, cluster: {}}]
contexts: [{name: c, context: {cluster: k}}]`, "c", []string{`cluster "k": server is empty`}},
		{"server not a URL", `
clusters: [{name: k, cluster: {server: "ftp://x"}}]
contexts: [{name: c, context: {cluster: k}}]`, "c", []string{`cluster "k": server "ftp://x" is not an http:// or https:// URL`}},
		{"bad base64", `
clusters: [{name: k, cluster: {server: "https://k"}}]
users: [{name: u, user: {client-key-data: "` + secret + `!!"}}]
contexts: [{name: c, context: {cluster: k, user: u}}]`, "c", []string{`user "u": client-key-data: not valid base64`}},
		{"bad CA base64", `
clusters: [{name: k, cluster: {server: "https://k", certificate-authority-data: "%%%"}}]
contexts: [{name: c, context: {cluster: k}}]`, "c", []string{`cluster "k": certificate-authority-data: not valid base64`}},
		// kubectl refuses a data field beside its file; so do we, rather
		// than guess which was meant.
		{"CA data beside its file", `
clusters: [{name: k, cluster: {server: "https://k", certificate-authority-data: Q0E=, certificate-authority: ca.crt}}]
contexts: [{name: c, context: {cluster: k}}]`, "c", []string{`cluster "k": certificate-authority-data and certificate-authority are both set`}},
		{"client certificate data beside its file", `
clusters: [{name: k, cluster: {server: "https://k"}}]
users: [{name: u, user: {client-certificate-data: Q0VSVA==, client-certificate: c.crt, client-key-data: S0VZ}}]
contexts: [{name: c, context: {cluster: k, user: u}}]`, "c", []string{`user "u": client-certificate-data and client-certificate are both set`}},
		{"client key data beside its file", `
clusters: [{name: k, cluster: {server: "https://k"}}]
users: [{name: u, user: {client-certificate-data: Q0VSVA==, client-key-data: S0VZ, client-key: c.key}}]
contexts: [{name: c, context: {cluster: k, user: u}}]`, "c", []string{`user "u": client-key-data and client-key are both set`}},
		{"auth provider", `
clusters: [{name: k, cluster: {server: "https://k"}}]
users: [{name: u, user: {auth-provider: {name: oidc, config: {id-token: ` + secret + `}}}}]
contexts: [{name: c, context: {cluster: k, user: u}}]`, "c", []string{`auth-provider "oidc" is not supported`}},
		// Without "as", the apiserver refuses the other impersonation
		// fields: said before any request.
		{"impersonation of groups without as", `
clusters: [{name: k, cluster: {server: "https://k"}}]
users: [{name: u, user: {as-groups: ["system:masters"], token: ` + secret + `}}]
contexts: [{name: c, context: {cluster: k, user: u}}]`, "c", []string{"as-groups", "without as"}},
		{"impersonation of a uid without as", `
clusters: [{name: k, cluster: {server: "https://k"}}]
users: [{name: u, user: {as-uid: "1234", token: ` + secret + `}}]
contexts: [{name: c, context: {cluster: k, user: u}}]`, "c", []string{"without as"}},
		{"impersonation extra without as", `
clusters: [{name: k, cluster: {server: "https://k"}}]
users: [{name: u, user: {as-user-extra: {reason: [break-glass]}, token: ` + secret + `}}]
contexts: [{name: c, context: {cluster: k, user: u}}]`, "c", []string{"without as"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")), tt.content)
			_, err := LoadKubeconfig(path, tt.context)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, path) {
				t.Errorf("error does not name the file: %s", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q: %s", w, msg)
				}
			}
			if strings.Contains(msg, secret[:4]) { // YAML quotes 7 bytes of a value
				t.Errorf("error shows (part of) the secret: %s", msg)
			}
		})
	}
}

// Kubeconfig files found through $KUBECONFIG or at ~/.kube/config that
// define nothing (as an image may ship) are no kubeconfig: the caller may
// fall back to InClusterConfig, as client-go's loader does. A file named,
// or a context named, is still an error of its own.
func TestLoadKubeconfigEmptyIsNoKubeconfig(t *testing.T) {
	dir := t.TempDir()
	for _, content := range []string{"", "{}", "apiVersion: v1\nkind: Config\nclusters: []\n"} {
		path := writeFile(t, filepath.Join(dir, fmt.Sprintf("empty-%d", len(content))), content)
		t.Setenv("KUBECONFIG", path+string(filepath.ListSeparator)+filepath.Join(dir, "missing"))
		_, err := LoadKubeconfig("", "")
		if !errors.Is(err, ErrNoKubeconfig) || !strings.Contains(err.Error(), path) {
			t.Errorf("%q from $KUBECONFIG: err = %v, want ErrNoKubeconfig naming the file", content, err)
		}
		if _, err := LoadKubeconfig("", "prod"); err == nil || errors.Is(err, ErrNoKubeconfig) {
			t.Errorf("%q with a context named: err = %v, want an error that is not ErrNoKubeconfig", content, err)
		}
		if _, err := LoadKubeconfig(path, ""); err == nil || errors.Is(err, ErrNoKubeconfig) {
			t.Errorf("%q named: err = %v, want an error that is not ErrNoKubeconfig", content, err)
		}
	}
}

func TestLoadKubeconfigMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope")
	_, err := LoadKubeconfig(path, "")
	if errors.Is(err, ErrNoKubeconfig) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("err = %v, want fs.ErrNotExist naming the file, and not ErrNoKubeconfig: a file named but missing is no reason to fall back", err)
	}
}

// A name defined twice in one file is an error that names it, as for
// kubectl, and shows none of the entries (they hold credentials).
func TestLoadKubeconfigDuplicateNames(t *testing.T) {
	for kind, doc := range map[string]string{
		"cluster": `{"clusters": [{"name": "k", "cluster": {"server": "https://a"}}, {"name": "k", "cluster": {"server": "https://b"}}]}`,
		"user":    `{"users": [{"name": "u", "user": {"token": "s3cr3t-1"}}, {"name": "u", "user": {"token": "s3cr3t-2"}}]}`,
		"context": `{"contexts": [{"name": "c", "context": {"cluster": "k"}}, {"name": "c", "context": {"cluster": "j"}}]}`,
	} {
		path := writeFile(t, filepath.Join(t.TempDir(), "config"), doc)
		_, err := LoadKubeconfig(path, "")
		if err == nil || !strings.Contains(err.Error(), kind+" \"") || !strings.Contains(err.Error(), "defined twice") || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s defined twice: err = %v", kind, err)
		}
	}
}

// Relative paths in a kubeconfig named by a relative path stay right after
// the program changes directory.
func TestLoadKubeconfigRelativePathsAreAbsolute(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "config"), `{
  "current-context": "c",
  "clusters": [{"name": "k", "cluster": {"server": "https://k.example", "certificate-authority": "ca.crt"}}],
  "contexts": [{"name": "c", "context": {"cluster": "k"}}]
}`)
	t.Chdir(dir)
	cfg, err := LoadKubeconfig("config", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "ca.crt"); cfg.TLS.CAFile != want {
		t.Errorf("CAFile = %q, want %q", cfg.TLS.CAFile, want)
	}
}

// A kubeconfig is a JSON document too.
func TestLoadKubeconfigJSON(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), "config.json"), `{
  "current-context": "c",
  "clusters": [{"name": "k", "cluster": {"server": "https://k.example", "insecure-skip-tls-verify": true}}],
  "users": [{"name": "u", "user": {"token": "tok"}}],
  "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u", "namespace": "ns"}}]
}`)
	cfg, err := LoadKubeconfig(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://k.example" || cfg.BearerToken != "tok" || !cfg.TLS.Insecure || cfg.Namespace != "ns" {
		t.Errorf("got %#v", configFieldsOf(cfg))
	}
}

// FuzzLoadKubeconfig feeds arbitrary bytes to the kubeconfig parser and
// resolves every context: it must return errors, never panic.
func FuzzLoadKubeconfig(f *testing.F) {
	f.Add([]byte(fullKubeconfig))
	f.Add([]byte(`{"current-context":"c","contexts":[{"name":"c","context":{"cluster":"k"}}],"clusters":[{"name":"k","cluster":{"server":"https://k"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		kc, err := parseKubeconfig(data, "/base")
		if err != nil {
			return
		}
		_, _ = kc.config("")
		for name := range kc.contexts {
			_, _ = kc.config(name)
		}
	})
}

// as, as-uid, as-groups and as-user-extra become Config.Impersonate, as
// clientcmd makes them rest.Config.Impersonate.
func TestLoadKubeconfigImpersonation(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), "config"), `
current-context: c
clusters: [{name: k, cluster: {server: "https://k"}}]
users: [{name: u, user: {token: t, as: alice, as-uid: "1234", as-groups: [devs, ops], as-user-extra: {reason: [break-glass]}}}]
contexts: [{name: c, context: {cluster: k, user: u}}]`)
	cfg, err := LoadKubeconfig(path, "")
	if err != nil {
		t.Fatal(err)
	}
	want := ImpersonationConfig{UserName: "alice", UID: "1234", Groups: []string{"devs", "ops"}, Extra: map[string][]string{"reason": {"break-glass"}}}
	if !reflect.DeepEqual(cfg.Impersonate, want) {
		t.Errorf("Impersonate = %+v, want %+v", cfg.Impersonate, want)
	}
}

// A server written without a scheme (kubeadm's "10.0.0.1:6443", a host
// name alone): clientcmd silently picks http:// for both (client-go 0.37,
// even with certificate-authority-data set). Refusing is right, but the
// error hid the value as "[redacted] (invalid URL)" and did not say what
// to write.
func TestLoadKubeconfigServerWithoutScheme(t *testing.T) {
	for _, server := range []string{"10.0.0.1:6443", "k.example", "[fd00::1]:6443"} {
		path := writeFile(t, filepath.Join(t.TempDir(), "config"), `
current-context: c
clusters: [{name: k, cluster: {server: "`+server+`"}}]
contexts: [{name: c, context: {cluster: k}}]`)
		_, err := LoadKubeconfig(path, "")
		if err == nil || !strings.Contains(err.Error(), "https://"+server) {
			t.Errorf("server %q: err = %v, want it to suggest https://%s", server, err, server)
		}
	}
}

// The removed auth providers: kubectl names their replacement (gcp, azure)
// and still supports oidc. The error should say which plugin to install.
func TestLoadKubeconfigAuthProviderNamesTheReplacement(t *testing.T) {
	for name, want := range map[string]string{
		"gcp":   "gke-gcloud-auth-plugin",
		"azure": "kubelogin",
		"oidc":  "oidc-login",
	} {
		path := writeFile(t, filepath.Join(t.TempDir(), "config"), `
current-context: c
clusters: [{name: k, cluster: {server: "https://k"}}]
users: [{name: u, user: {auth-provider: {name: `+name+`, config: {access-token: SECRET}}}}]
contexts: [{name: c, context: {cluster: k, user: u}}]`)
		_, err := LoadKubeconfig(path, "")
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("auth-provider %s: err = %v, want it to name %s", name, err, want)
		}
	}
}

// A kubeconfig's user is read as kubectl (client-go) reads it: basic auth
// only with a username (transport.Config.HasBasicAuth), so a password alone
// sends nothing and leaves an exec plugin to run; a client key only with a
// client certificate (getUserIdentificationPartialConfig), so a stray key
// is ignored rather than failing NewClient or keeping the plugin from
// running. Found by a review helper against client-go.
func TestLoadKubeconfigCredentialsAsKubectl(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ca.crt"), string(serverCAPEM(srv)))
	writeFile(t, filepath.Join(dir, "stray.key"), "not a key")
	plugin := writeFile(t, filepath.Join(dir, "plug"), "#!/bin/sh\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"exectok\"}}'\n")
	if err := os.Chmod(plugin, 0o700); err != nil {
		t.Fatal(err)
	}
	const exec = `exec: {command: ./plug, apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never}`
	for _, tc := range []struct{ name, user, want string }{
		{"password without username", `{password: pw}`, ""},
		{"client-key without client-certificate", `{token: tok, client-key: stray.key}`, "Bearer tok"},
		{"client-key-data without client-certificate", `{token: tok, client-key-data: S0VZ}`, "Bearer tok"},
		{"exec and a password without username", `{password: pw, ` + exec + `}`, "Bearer exectok"},
		{"exec and client-key without client-certificate", `{client-key: stray.key, ` + exec + `}`, "Bearer exectok"},
		{"username and password", `{username: admin, password: pw}`, "Basic YWRtaW46cHc="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := writeFile(t, filepath.Join(dir, "k"), `current-context: c
clusters: [{name: cl, cluster: {server: "`+srv.URL+`", certificate-authority: ca.crt}}]
users: [{name: u, user: `+tc.user+`}]
contexts: [{name: c, context: {cluster: cl, user: u}}]
`)
			cfg, err := LoadKubeconfig(kc, "")
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewClient(cfg)
			if err != nil {
				t.Fatalf("NewClient: %v (kubectl takes this kubeconfig)", err)
			}
			defer c.CloseConnections()
			if _, body := get(t, c, "/"); body != tc.want {
				t.Errorf("Authorization %q, want %q as kubectl", body, tc.want)
			}
		})
	}
	bad := writeFile(t, filepath.Join(dir, "bad"), `current-context: c
clusters: [{name: cl, cluster: {server: "`+srv.URL+`"}}]
users: [{name: u, user: {token: tok, client-key-data: "not base64!"}}]
contexts: [{name: c, context: {cluster: cl, user: u}}]
`)
	if _, err := LoadKubeconfig(bad, ""); err == nil || !strings.Contains(err.Error(), "client-key-data") {
		t.Errorf("bad base64 in a stray client-key-data: err = %v, want it named (kubectl refuses it too)", err)
	}
}

// The exec extension handed to a plugin has its YAML keys made strings as
// sigs.k8s.io/yaml makes them for kubectl: {1: a} is {"1": "a"}.
func TestLoadKubeconfigExecExtensionKeys(t *testing.T) {
	kc := writeFile(t, filepath.Join(t.TempDir(), "k"), `current-context: c
clusters:
- name: cl
  cluster:
    server: https://a.example
    extensions:
    - name: client.authentication.k8s.io/exec
      extension: {1: a, b: {true: c, 2.5: d}}
users: [{name: u, user: {exec: {command: plug, apiVersion: client.authentication.k8s.io/v1, provideClusterInfo: true}}}]
contexts: [{name: c, context: {cluster: cl, user: u}}]
`)
	cfg, err := LoadKubeconfig(kc, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(cfg.Exec.ClusterConfig), `{"1":"a","b":{"2.5":"d","true":"c"}}`; got != want {
		t.Errorf("ClusterConfig %s, want %s", got, want)
	}
}
