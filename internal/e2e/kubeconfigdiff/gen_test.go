package kubeconfigdiff

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A random kubeconfig, from a small grammar: one to three files, each
// defining some of the clusters c0-c2, users u0-u2 and contexts x0-x2, so
// that files overlap and the first file's definitions win. Files a
// kubeconfig names (CA, token, certificate, key, plugin) are written beside
// it, under the same relative names in every file's folder but with
// contents of that file's own, so that a path resolved against the wrong
// folder shows.

// scenario is one generated kubeconfig and how it is loaded.
type scenario struct {
	files    []string // the kubeconfig files, in order (some may be missing)
	explicit bool     // files[0] is named (ExplicitPath, LoadKubeconfig's path); else $KUBECONFIG / Precedence
	context  string   // the context asked for; empty: current-context
}

// describe is the scenario as a failure shows it: how it was loaded and
// every file's YAML.
func (s *scenario) describe() string {
	var b strings.Builder
	if s.explicit {
		fmt.Fprintf(&b, "loaded from the path %s", s.files[0])
	} else {
		fmt.Fprintf(&b, "loaded from $KUBECONFIG=%s", strings.Join(s.files, string(filepath.ListSeparator)))
	}
	fmt.Fprintf(&b, ", context %q\n", s.context)
	for _, f := range s.files {
		data, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(&b, "--- %s: %v\n", f, err)
			continue
		}
		fmt.Fprintf(&b, "--- %s\n%s", f, data)
	}
	return b.String()
}

type generator struct {
	r   *rand.Rand
	pki *pki
	srv *servers
	// plugin is the test binary, which TestMain makes a credential plugin.
	plugin string
	// defined holds the names defined so far, by kind ("c", "u", "x"):
	// most references name one of them.
	defined map[string][]string
	// sane, drawn for each scenario, leaves out the broken choices (a
	// missing file, bad base64, a name never defined, ...), so that most
	// scenarios get as far as a request.
	sane bool
	// current is set once a file sets a current-context.
	current bool
}

// broken is chance(p) for a broken choice: false when sane.
func (g *generator) broken(p float64) bool { return !g.sane && g.chance(p) }

// bw is the weight n of a broken choice for pick: 0 when sane.
func (g *generator) bw(n int) int {
	if g.sane {
		return 0
	}
	return n
}

// ref returns a name to refer to something of kind: mostly one defined so
// far, else any of the pool or one never defined.
func (g *generator) ref(kind string) string {
	if d := g.defined[kind]; len(d) > 0 && (g.sane || g.chance(0.9)) {
		return d[g.r.IntN(len(d))]
	}
	return pick[string](g, kind+"0", 3, kind+"1", 3, kind+"2", 3, "nosuch", g.bw(1))
}

func (g *generator) chance(p float64) bool { return g.r.Float64() < p }

// pick returns one of choices, weighted by the ints that follow each.
func pick[T any](g *generator, choices ...any) T {
	total := 0
	for i := 1; i < len(choices); i += 2 {
		total += choices[i].(int)
	}
	n := g.r.IntN(total)
	for i := 1; i < len(choices); i += 2 {
		if n -= choices[i].(int); n < 0 {
			return choices[i-1].(T)
		}
	}
	panic("unreachable")
}

// generate writes a scenario's files under root.
func (g *generator) generate(t *testing.T, root string) *scenario {
	t.Helper()
	s := &scenario{}
	g.defined = map[string][]string{}
	g.sane, g.current = g.chance(0.5), false
	n := pick[int](g, 1, 5, 2, 3, 3, 2)
	for i := range n {
		dir := filepath.Join(root, "f"+strconv.Itoa(i))
		if i == 1 {
			dir = filepath.Join(root, "f1", "nested")
		}
		if err := os.MkdirAll(filepath.Join(dir, "certs"), 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "config")
		if g.broken(0.05) && n > 1 {
			s.files = append(s.files, path) // listed, missing
			continue
		}
		fw := &fileWriter{g: g, t: t, dir: dir, file: i}
		data := fw.kubeconfig()
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		s.files = append(s.files, path)
	}
	s.explicit = n == 1 && g.chance(0.7)
	if g.chance(0.4) || (g.sane && !g.current) {
		s.context = g.ref("x")
	}
	return s
}

// fileWriter writes one kubeconfig file and the files it names.
type fileWriter struct {
	g    *generator
	t    *testing.T
	dir  string
	file int
	b    strings.Builder
}

func (w *fileWriter) line(indent int, format string, args ...any) {
	w.b.WriteString(strings.Repeat("  ", indent))
	fmt.Fprintf(&w.b, format, args...)
	w.b.WriteByte('\n')
}

// q quotes a YAML string (JSON's double-quoted strings are YAML's).
func q(s string) string { return strconv.Quote(s) }

// names returns k names of prefix0..prefix2, usually distinct; now and
// then one twice (a duplicate within a file).
func (w *fileWriter) names(prefix string) []string {
	g := w.g
	k := pick[int](g, 0, 1, 1, 4, 2, 3, 3, 1)
	perm := g.r.Perm(3)
	var out []string
	for i := range k {
		out = append(out, prefix+strconv.Itoa(perm[i]))
	}
	if k > 0 && g.broken(0.03) {
		out = append(out, out[0])
	}
	g.defined[prefix] = append(g.defined[prefix], out...)
	return out
}

// put writes a file the kubeconfig names and returns how the kubeconfig
// names it: relative to the kubeconfig's folder, or absolute.
func (w *fileWriter) put(name string, data []byte) string {
	rel := filepath.Join("certs", name)
	if err := os.WriteFile(filepath.Join(w.dir, rel), data, 0o600); err != nil {
		w.t.Fatal(err)
	}
	if w.g.chance(0.5) {
		return rel
	}
	return filepath.Join(w.dir, rel)
}

// putAbs writes a file and returns its absolute path.
func (w *fileWriter) putAbs(name string, data []byte) string {
	path := filepath.Join(w.dir, "certs", name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		w.t.Fatal(err)
	}
	return path
}

// missing returns how the kubeconfig names a file that does not exist.
func (w *fileWriter) missing(name string) string {
	return filepath.Join("certs", "missing-"+name)
}

func b64(data []byte) string { return base64.StdEncoding.EncodeToString(data) }

const badBase64 = "!!not base64!!"

func (w *fileWriter) kubeconfig() string {
	g := w.g
	if g.broken(0.02) {
		return "" // empty
	}
	if g.broken(0.02) {
		return "clusters: [\n  - {name: c0\n" // unreadable YAML
	}
	w.line(0, "apiVersion: v1")
	w.line(0, "kind: Config")
	current := w.g.chance(0.75) // written last, when the contexts are known
	if cs := w.names("c"); len(cs) > 0 {
		w.line(0, "clusters:")
		for _, c := range cs {
			w.cluster(c)
		}
	}
	if us := w.names("u"); len(us) > 0 {
		w.line(0, "users:")
		for _, u := range us {
			w.user(u)
		}
	}
	if xs := w.names("x"); len(xs) > 0 {
		w.line(0, "contexts:")
		for _, x := range xs {
			w.context(x)
		}
	}
	switch {
	case current:
		w.line(0, "current-context: %s", q(g.ref("x")))
		g.current = true
	case g.chance(0.1):
		w.line(0, `current-context: ""`)
	}
	return w.b.String()
}

func (w *fileWriter) cluster(name string) {
	g, srv, p := w.g, w.g.srv, w.g.pki
	w.line(0, "- name: %s", q(name))
	w.line(1, "cluster:")
	server := pick[string](g, "A", 10, "B", 6, "H", 4, "noscheme", g.bw(1), "closed", g.bw(1))
	var url, own, other string // own: the server's CA and name; other: the other's
	switch server {
	case "A":
		url, own, other = srv.a, "a", "b"
	case "B":
		url, own, other = srv.b, "b", "a"
	case "H":
		url = srv.h
	case "noscheme":
		url = strings.TrimPrefix(srv.a, "https://")
	case "closed":
		url = "https://" + srv.closed
	}
	if server != "noscheme" {
		switch pick[string](g, "", 16, "prefix", 2, "slash", 1) {
		case "prefix":
			url += "/k8s/clusters/" + name
		case "slash":
			url += "/"
		}
	}
	w.line(2, "server: %s", q(url))
	ca := func(which string) []byte {
		if which == "b" {
			return p.ca2
		}
		return p.ca1 // "a", and the closed server's
	}
	caName := own
	if caName == "" || g.broken(0.2) {
		caName = pick[string](g, "a", 1, "b", 1) // a wrong CA, or one for plain http
	}
	hasCA := true
	switch pick[string](g, "none", 2, "file", 4, "data", 4, "both", 1, "missing", g.bw(1), "bad", g.bw(1)) {
	case "none":
		hasCA = false
	case "file":
		w.line(2, "certificate-authority: %s", q(w.put("ca-"+name+".crt", ca(caName))))
	case "data":
		w.line(2, "certificate-authority-data: %s", b64(ca(caName)))
	case "both":
		w.line(2, "certificate-authority: %s", q(w.put("ca-"+name+".crt", ca(pick[string](g, "a", 1, "b", 1)))))
		w.line(2, "certificate-authority-data: %s", b64(ca(caName)))
	case "missing":
		w.line(2, "certificate-authority: %s", q(w.missing("ca-"+name+".crt")))
	case "bad":
		w.line(2, "certificate-authority-data: %s", q(badBase64))
	}
	if (!hasCA && g.chance(0.15)) || g.broken(0.15) {
		w.line(2, "insecure-skip-tls-verify: true")
	}
	if own != "" && g.chance(0.25) {
		sni := own
		if g.broken(0.5) {
			sni = other
		}
		w.line(2, "tls-server-name: %s", q(sni+".kcdiff.test"))
	}
	switch pick[string](g, "none", 16, "proxy", 5, "closed", g.bw(1)) {
	case "proxy":
		w.line(2, "proxy-url: %s", q(srv.proxy))
	case "closed":
		w.line(2, "proxy-url: %s", q("http://"+srv.closed))
	}
	if g.chance(0.3) {
		w.line(2, "disable-compression: true")
	}
	if g.chance(0.2) {
		w.line(2, "extensions:")
		w.line(2, "- name: client.authentication.k8s.io/exec")
		w.line(2, "  extension: {audience: %s, nested: {list: [1, two], flag: true}}", q("aud-"+name))
	}
}

func (w *fileWriter) user(name string) {
	g, p := w.g, w.g.pki
	tag := fmt.Sprintf("f%d-%s", w.file, name) // in every credential, to tell whose it is
	w.line(0, "- name: %s", q(name))
	w.line(1, "user:")
	if g.chance(0.35) {
		w.line(2, "token: %s", q("token-"+tag))
	}
	if g.chance(0.25) {
		if g.broken(0.2) {
			w.line(2, "tokenFile: %s", q(w.missing("token-"+name)))
		} else {
			w.line(2, "tokenFile: %s", q(w.put("token-"+name, []byte("filetoken-"+tag+"\n"))))
		}
	}
	if g.chance(0.12) {
		w.line(2, "username: %s", q("user-"+tag))
		if g.chance(0.8) {
			w.line(2, "password: %s", q("pw-"+tag))
		}
	} else if g.chance(0.03) {
		w.line(2, "password: %s", q("pw-"+tag))
	}
	kp := p.clients[g.r.IntN(len(p.clients))]
	switch pick[string](g, "none", 12, "files", 3, "data", 3, "mixed", 1, "both", 1, "cert", g.bw(1), "key", 1, "bad", g.bw(1), "missing", g.bw(1)) {
	case "files":
		w.line(2, "client-certificate: %s", q(w.put("client-"+name+".crt", kp.cert)))
		w.line(2, "client-key: %s", q(w.put("client-"+name+".key", kp.key)))
	case "data":
		w.line(2, "client-certificate-data: %s", b64(kp.cert))
		w.line(2, "client-key-data: %s", b64(kp.key))
	case "mixed":
		w.line(2, "client-certificate: %s", q(w.put("client-"+name+".crt", kp.cert)))
		w.line(2, "client-key-data: %s", b64(kp.key))
	case "both": // data and files, the files of another pair
		other := p.clients[(g.r.IntN(len(p.clients)-1)+1+slicesIndex(p.clients, kp))%len(p.clients)]
		w.line(2, "client-certificate: %s", q(w.put("client-"+name+".crt", other.cert)))
		w.line(2, "client-certificate-data: %s", b64(kp.cert))
		if g.chance(0.5) {
			w.line(2, "client-key: %s", q(w.put("client-"+name+".key", other.key)))
		}
		w.line(2, "client-key-data: %s", b64(kp.key))
	case "cert":
		w.line(2, "client-certificate-data: %s", b64(kp.cert))
	case "key":
		w.line(2, "client-key-data: %s", b64(kp.key))
	case "bad":
		w.line(2, "client-certificate-data: %s", q(badBase64))
		w.line(2, "client-key-data: %s", b64(kp.key))
	case "missing":
		w.line(2, "client-certificate: %s", q(w.missing("client-"+name+".crt")))
		w.line(2, "client-key: %s", q(w.put("client-"+name+".key", kp.key)))
	}
	as := g.chance(0.3)
	// withAs is the chance of another impersonation field: beside as, or
	// (broken) without it.
	withAs := func(p float64) bool {
		if as {
			return g.chance(p)
		}
		return g.broken(p / 10)
	}
	if as {
		w.line(2, "as: %s", q("as-"+tag))
	}
	if withAs(0.4) {
		w.line(2, "as-uid: %s", q("uid-"+tag))
	}
	if withAs(0.5) {
		w.line(2, "as-groups:")
		for i := range 1 + g.r.IntN(2) {
			w.line(2, "- %s", q(fmt.Sprintf("group%d-%s", i, tag)))
		}
	}
	if withAs(0.3) {
		w.line(2, "as-user-extra:")
		key := pick[string](g, "scopes", 2, "example.org/team", 1, "Mixed_Case key", 1)
		w.line(3, "%s:", q(key))
		w.line(3, "- %s", q("v1-"+tag))
		if g.chance(0.5) {
			w.line(3, "- %s", q("v2-"+tag))
		}
	}
	if g.chance(0.25) {
		w.exec(tag, kp)
	}
	if g.broken(0.04) {
		w.line(2, "auth-provider:")
		w.line(3, "name: %s", pick[string](g, "oidc", 1, "gcp", 1))
	}
}

func (w *fileWriter) exec(tag string, kp keyPair) {
	g := w.g
	w.line(2, "exec:")
	w.line(3, "apiVersion: %s", pick[string](g, "client.authentication.k8s.io/v1", 1, "client.authentication.k8s.io/v1beta1", 1))
	command := w.g.plugin
	switch pick[string](g, "abs", 4, "rel", 2, "missing", g.bw(1)) {
	case "rel":
		link := filepath.Join(w.dir, "certs", "kcdiff-plugin")
		if _, err := os.Lstat(link); err != nil {
			if err := os.Symlink(w.g.plugin, link); err != nil {
				w.t.Fatal(err)
			}
		}
		command = "./" + filepath.Join("certs", "kcdiff-plugin")
	case "missing":
		command = filepath.Join(w.dir, "no-such-plugin")
	}
	w.line(3, "command: %s", q(command))
	if g.chance(0.5) {
		w.line(3, "provideClusterInfo: true")
	}
	if mode := pick[string](g, "", 1, "Never", 3, "IfAvailable", 3); mode != "" {
		w.line(3, "interactiveMode: %s", mode)
	}
	w.line(3, "env:")
	w.line(3, "- {name: KCDIFF_EXEC_PLUGIN, value: \"1\"}")
	if g.chance(0.8) {
		w.line(3, "- {name: KCDIFF_EXEC_TOKEN, value: %s}", q("exectoken-"+tag))
	}
	if g.chance(0.25) {
		w.line(3, "- {name: KCDIFF_EXEC_CERT, value: %s}", q(w.putAbs("exec-"+tag+".crt", kp.cert)))
		w.line(3, "- {name: KCDIFF_EXEC_KEY, value: %s}", q(w.putAbs("exec-"+tag+".key", kp.key)))
	}
	if g.broken(0.1) {
		w.line(3, "- {name: KCDIFF_EXEC_FAIL, value: \"1\"}")
	}
}

func (w *fileWriter) context(name string) {
	g := w.g
	w.line(0, "- name: %s", q(name))
	w.line(1, "context:")
	if !g.broken(0.03) {
		w.line(2, "cluster: %s", q(g.ref("c")))
	}
	if !g.chance(0.15) {
		w.line(2, "user: %s", q(g.ref("u")))
	}
	switch {
	case g.broken(0.03):
		w.line(2, "namespace: %s", q("Not_A_DNS_Label"))
	case g.chance(0.5):
		w.line(2, "namespace: %s", q(fmt.Sprintf("ns-f%d-%s", w.file, name)))
	}
}

func slicesIndex(kps []keyPair, kp keyPair) int {
	for i := range kps {
		if kps[i].cn == kp.cn {
			return i
		}
	}
	return -1
}
