package kubeconfigdiff

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// edge is a written case: kubeconfig files (merged through $KUBECONFIG
// when there are several) and the files beside each.
type edge struct {
	name    string
	files   []string            // kubeconfig YAML, with the placeholders of edgeReplacer
	beside  []map[string]string // per file: path relative to its folder → contents
	context string
}

// edges are the cases the grammar reaches rarely or not at all, and one
// for each expected difference.
var edges = []edge{
	{name: "a token", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", "token: tok", "")}},
	{name: "tokenFile wins over token", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", "{token: tok, tokenFile: t}", "")},
		beside: []map[string]string{{"t": "from-file\n"}}},
	{name: "basic auth", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", "{username: u, password: p}", "")}},
	{name: "a password without a username", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", "{password: p}", "")}},
	{name: "client certificate files", files: []string{cfg("{A}", "certificate-authority: ca.crt", "{client-certificate: c.crt, client-key: c.key}", "")},
		beside: []map[string]string{{"ca.crt": "{CA1PEM}", "c.crt": "{CERTPEM}", "c.key": "{KEYPEM}"}}},
	{name: "client certificate data and a token", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", "{token: tok, client-certificate-data: {CERT}, client-key-data: {KEY}}", "")}},
	{name: "a client key without a certificate", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", "{token: tok, client-key-data: {KEY}}", "")}},
	{name: "impersonation with groups, uid and extra", files: []string{cfg("{A}", "certificate-authority-data: {CA1}",
		`{token: tok, as: jane, as-uid: "42", as-groups: [g1, g2], as-user-extra: {scopes: [a, b], "example.org/team x": [v]}}`, "")}},
	{name: "as-groups without as", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", "{token: tok, as-groups: [g1]}", "")}},
	{name: "an exec plugin's token", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", execUser("v1", "Never", "KCDIFF_EXEC_TOKEN: et"), "")}},
	{name: "an exec plugin's certificate", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", execUser("v1beta1", "", "KCDIFF_EXEC_CERT: {CERTFILE}, KCDIFF_EXEC_KEY: {KEYFILE}"), "")}},
	{name: "an exec plugin beside a token", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", strings.Replace(execUser("v1", "Never", "KCDIFF_EXEC_TOKEN: et"), "{", "{token: tok, ", 1), "")}},
	{name: "an exec plugin that fails", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", execUser("v1", "Never", `KCDIFF_EXEC_FAIL: "1"`), "")}},
	{name: "the right tls-server-name", files: []string{cfg("{A}", "{certificate-authority-data: {CA1}, tls-server-name: a.kcdiff.test}", "token: tok", "")}},
	{name: "a wrong tls-server-name", files: []string{cfg("{A}", "{certificate-authority-data: {CA1}, tls-server-name: b.kcdiff.test}", "token: tok", "")}},
	{name: "a wrong CA", files: []string{cfg("{A}", "certificate-authority-data: {CA2}", "token: tok", "")}},
	{name: "insecure-skip-tls-verify", files: []string{cfg("{B}", "insecure-skip-tls-verify: true", "token: tok", "")}},
	{name: "no CA: the system's roots", files: []string{cfg("{A}", "{}", "token: tok", "")}},
	{name: "proxy-url to https", files: []string{cfg("{A}", "{certificate-authority-data: {CA1}, proxy-url: {PROXY}}", "token: tok", "")}},
	{name: "proxy-url to http", files: []string{cfg("{H}", "{proxy-url: {PROXY}, disable-compression: true}", "{}", "")}},
	{name: "disable-compression over https", files: []string{cfg("{A}", "{certificate-authority-data: {CA1}, disable-compression: true}", "{}", "")}},
	{name: "a namespace", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", "{}", "ns1")}},
	{name: "a missing token file", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", "tokenFile: nosuch", "")}},
	{name: "a missing CA file", files: []string{cfg("{A}", "certificate-authority: nosuch", "token: tok", "")}},
	{name: "unreadable YAML", files: []string{"clusters: [\n  - {name: c\n"}},
	{name: "a context naming a missing cluster", files: []string{`current-context: x
contexts: [{name: x, context: {cluster: gone, user: u}}]
users: [{name: u, user: {token: tok}}]`}},
	{name: "a context asked for by name", context: "other", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", "token: tok", "ns1") + `
- {name: other, context: {cluster: c, user: u, namespace: ns2}}`}},
	{
		name: "merged: the first file wins, paths relative to each file",
		files: []string{
			"users: [{name: u, user: {tokenFile: t}}]\n",
			cfg("{A}", "certificate-authority: ca.crt", "{tokenFile: t}", "ns1"),
		},
		beside: []map[string]string{{"t": "first\n"}, {"t": "second\n", "ca.crt": "{CA1PEM}"}},
	},
	{
		name: "merged: current-context from the first file that sets one",
		files: []string{
			"contexts: [{name: z, context: {cluster: c, namespace: from-first}}]\n",
			cfg("{A}", "certificate-authority-data: {CA1}", "token: tok", "ns1") + "\n- {name: z, context: {cluster: c, namespace: from-second}}\n",
			"current-context: z\n",
		},
	},
	// One for each expected difference.
	{name: "a server without a scheme", files: []string{cfg("{NOSCHEME}", "certificate-authority-data: {CA1}", "token: tok", "")}},
	{name: "a token over plain http", files: []string{cfg("{H}", "{}", "token: tok", "")}},
	{name: "a token file and basic auth over plain http", files: []string{cfg("{H}", "{}", "{tokenFile: t, username: u, password: p}", "")},
		beside: []map[string]string{{"t": "tok\n"}}},
	{name: "an auth-provider over plain http", files: []string{cfg("{H}", "{}", "auth-provider: {name: oidc}", "")}},
	{name: "a CA and insecure-skip-tls-verify over plain http", files: []string{cfg("{H}", "{certificate-authority-data: {CA1}, insecure-skip-tls-verify: true}", "{}", "")}},
	{name: "a context naming a missing user", files: []string{strings.Replace(cfg("{A}", "certificate-authority-data: {CA1}", "{}", ""), "user: u}", "user: gone}", 1)}},
	{name: "certificate-authority-data beside certificate-authority", files: []string{cfg("{A}", "{certificate-authority-data: {CA1}, certificate-authority: ca.crt}", "token: tok", "")},
		beside: []map[string]string{{"ca.crt": "{CA2PEM}"}}},
	{name: "client certificate data beside files", files: []string{cfg("{A}", "certificate-authority-data: {CA1}",
		"{client-certificate: c.crt, client-key: c.key, client-certificate-data: {CERT}, client-key-data: {KEY}}", "")},
		beside: []map[string]string{{"c.crt": "{CERT2PEM}", "c.key": "{KEY2PEM}"}}},
	{name: "a token beside a password", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", "{token: tok, password: p}", "")}},
	{name: "exec v1 without interactiveMode", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", execUser("v1", "", "KCDIFF_EXEC_TOKEN: et"), "")}},
	{name: "bad base64 in a user the context does not use", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", "token: tok", "") + `
users2: []`, `users: [{name: other, user: {client-certificate-data: "!!not base64!!"}}]`}},
	{name: "YAML 1.1 booleans and numbers where strings belong", context: "y", files: []string{cfg("{A}", "certificate-authority-data: {CA1}", "{token: 12345, as: n, as-groups: [yes, 1.5]}", "") +
		"\n- {name: y, context: {cluster: c, user: u, namespace: off}}"}},
	{name: "disable-compression over plain http", files: []string{cfg("{H}", "disable-compression: true", "{}", "")}},
}

// cfg is a kubeconfig with one cluster c, one user u and one context x
// (the current one) naming them and namespace ns. cluster and user are
// flow mappings of their fields, written one field a line as the
// generator writes them.
func cfg(server, cluster, user, ns string) string {
	var b strings.Builder
	b.WriteString("current-context: x\nclusters:\n- name: c\n  cluster:\n    server: \"" + server + "\"\n")
	for _, f := range fields(cluster) {
		b.WriteString("    " + f + "\n")
	}
	b.WriteString("users:\n- name: u\n  user:\n")
	for _, f := range fields(user) {
		b.WriteString("    " + f + "\n")
	}
	ctx := "{cluster: c, user: u}"
	if ns != "" {
		ctx = "{cluster: c, user: u, namespace: " + ns + "}"
	}
	b.WriteString("contexts:\n- {name: x, context: " + ctx + "}")
	return b.String()
}

// fields splits a flow mapping ("{a: b, c: [d, e]}", or without its
// braces) into its fields.
func fields(m string) []string {
	m = strings.TrimSpace(m)
	if strings.HasPrefix(m, "{") && strings.HasSuffix(m, "}") {
		m = m[1 : len(m)-1]
	}
	var out []string
	depth, quoted, start := 0, false, 0
	for i := 0; i <= len(m); i++ {
		if i < len(m) {
			switch c := m[i]; {
			case c == '"':
				quoted = !quoted
			case quoted:
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				depth--
			}
		}
		if i == len(m) || (m[i] == ',' && depth == 0 && !quoted) {
			if f := strings.TrimSpace(m[start:i]); f != "" {
				out = append(out, f)
			}
			start = i + 1
		}
	}
	return out
}

// execUser is a user whose exec plugin is the test binary, with env.
func execUser(version, mode, env string) string {
	s := "{exec: {command: {PLUGIN}, apiVersion: client.authentication.k8s.io/" + version
	if mode != "" {
		s += ", interactiveMode: " + mode
	}
	s += ", env: [{name: KCDIFF_EXEC_PLUGIN, value: \"1\"}"
	for kv := range strings.SplitSeq(env, ", ") {
		k, v, _ := strings.Cut(kv, ": ")
		s += ", {name: " + k + ", value: " + v + "}"
	}
	return s + "]}}"
}

func (e *env) edgeReplacer(dir string) *strings.Replacer {
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	kp := e.pki.clients[0]
	certFile, keyFile := filepath.Join(dir, "exec.crt"), filepath.Join(dir, "exec.key")
	_ = os.WriteFile(certFile, kp.cert, 0o600)
	_ = os.WriteFile(keyFile, kp.key, 0o600)
	return strings.NewReplacer(
		"{A}", e.srv.a, "{B}", e.srv.b, "{H}", e.srv.h, "{PROXY}", e.srv.proxy,
		"{NOSCHEME}", strings.TrimPrefix(e.srv.a, "https://"),
		"{CA1}", b64(e.pki.ca1), "{CA2}", b64(e.pki.ca2),
		"{CA1PEM}", string(e.pki.ca1), "{CA2PEM}", string(e.pki.ca2),
		"{CERT}", b64(kp.cert), "{KEY}", b64(kp.key), "{CERTPEM}", string(kp.cert), "{KEYPEM}", string(kp.key),
		"{CERT2PEM}", string(e.pki.clients[1].cert), "{KEY2PEM}", string(e.pki.clients[1].key),
		"{CERTFILE}", certFile, "{KEYFILE}", keyFile,
		"{PLUGIN}", e.plugin,
	)
}

// write writes the edge's files under root.
func (ed *edge) write(t *testing.T, e *env, root string) *scenario {
	t.Helper()
	r := e.edgeReplacer(root)
	s := &scenario{explicit: len(ed.files) == 1, context: ed.context}
	for i, f := range ed.files {
		dir := filepath.Join(root, "f"+string(rune('0'+i)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if i < len(ed.beside) {
			for name, data := range ed.beside[i] {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(r.Replace(data)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		path := filepath.Join(dir, "config")
		if err := os.WriteFile(path, []byte(r.Replace(f)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s.files = append(s.files, path)
	}
	return s
}
