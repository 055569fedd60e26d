package kubeconfigdiff

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The expected differences between listwatch and client-go, by name. Any
// other difference fails the test, and so does an entry no case shows.

// refusal is a kubeconfig that listwatch refuses on purpose and client-go
// takes.
type refusal struct {
	name string
	// why says why, citing where internal/rest documents it.
	why string
	// listwatch is listwatch's error, which must be that refusal.
	listwatch *regexp.Regexp
	// scheme, when set, is the one scheme where the refusal applies:
	// client-go's request must have been for a URL of that scheme.
	scheme string
}

var refusals = []refusal{
	{
		name: "server without a scheme",
		why: "kubeconfig.go, kubeCluster.apply: `\"10.0.0.1:6443\": no scheme ... kubectl would pick http:// " +
			"silently; say what to write instead` (client-go picks https when TLS settings are present, http otherwise)",
		listwatch: regexp.MustCompile(`^kubeconfig .*: cluster "[^"]*": server "[^"]*" has no scheme; write https://`),
	},
	{
		name: "a context naming a user that is not defined",
		why: "kubeconfig.go, LoadKubeconfig's doc: `a context naming a user that is not defined (kubectl sends " +
			"no credentials then)`; client-go sends the request " +
			"without credentials (clientcmd's getAuthInfo merges nothing and does not complain)",
		listwatch: regexp.MustCompile(`^kubeconfig .*: context "[^"]*" refers to user "[^"]*", which is not defined$`),
	},
	{
		name: "what client-go ignores over plain http",
		why: "clientcmd uses a user's credentials and a cluster's TLS settings only over https " +
			"(client_config.go: `only try to read the auth information if we are secure`) and sends no " +
			"credentials over http; listwatch checks them all the same: config.go, Config.AllowBearerOverHTTP " +
			"(`Without it that is an error: the credentials would cross the network in clear text`), NewClient " +
			"(`when both a bearer token and basic auth are set`), kubeconfig.go, kubeUser.apply (`auth-provider " +
			"%q is not supported`), and config.go, TLSConfig.Insecure (`Then CAData and CAFile must be empty`)",
		listwatch: regexp.MustCompile(`^(rest: refusing to send credentials in clear text to http://` +
			`|rest: both a bearer token and basic auth \(username/password\) are set; keep one$` +
			`|kubeconfig .*: user "[^"]*": auth-provider "[^"]*" is not supported; ` +
			`|rest: TLS: a CA certificate and Insecure are both set; verify the server or don't, not both$)`),
		scheme: "http",
	},
}

// clientGoIgnoresDisableCompression names client-go's own bug: a client
// whose configuration needs no TLS settings of its own, proxy or dialer is
// http.DefaultTransport (transport/cache.go, tlsTransportCache.get), which
// asks for gzip whatever DisableCompression says. listwatch honours
// disable-compression; the test expects client-go to ask for gzip then,
// and compares the rest.
const clientGoIgnoresDisableCompression = "client-go ignores disable-compression without TLS settings or a proxy"

// refusalFor returns the refusal that explains cg and lw, or nil:
// listwatch refused the kubeconfig with that refusal's error where
// client-go did not.
func refusalFor(cg, lw outcome) *refusal {
	if lw.stage != "config" || cg.stage == "config" {
		return nil
	}
	for i := range refusals {
		if r := &refusals[i]; r.listwatch.MatchString(lw.err.Error()) && (r.scheme == "" || strings.HasPrefix(cg.url, r.scheme+"://")) {
			return &refusals[i]
		}
	}
	return nil
}

// reading is a kubeconfig that clientcmd refuses and listwatch reads in a
// way of its own. The test does not stop at the refusal: it rewrites the
// kubeconfig into what listwatch reads it as, runs client-go on that, and
// compares everything as for any other case.
type reading struct {
	name string
	// why says why, citing where internal/rest documents it (a new
	// difference is documented there, or fixed, before it is named here).
	why string
	// clientGo matches one of clientcmd's errors.
	clientGo *regexp.Regexp
	// rewrite rewrites one user or cluster entry of a kubeconfig file
	// (its lines, "- name: ..." first) as listwatch reads it.
	rewrite func(entry []string) []string
}

var readings = []reading{
	{
		name: "a token beside a password without a username",
		why: "kubeconfig.go, LoadKubeconfig's doc: `a token beside a password without a username (the token is " +
			"sent; a password alone is never sent)`, where clientcmd refuses two authentication methods",
		clientGo: regexp.MustCompile(`more than one authentication method found for [^;]+; found \[token basicAuth\], only one is allowed`),
		rewrite: func(entry []string) []string {
			if hasField(entry, "username") {
				return entry
			}
			return dropField(entry, "password")
		},
	},
	{
		name: "an exec plugin of client.authentication.k8s.io/v1 without interactiveMode",
		why: "kubeconfig.go, LoadKubeconfig's doc: `an exec plugin of client.authentication.k8s.io/v1 without " +
			"interactiveMode (IfAvailable)`, as ExecConfig.InteractiveMode's default; clientcmd defaults it only " +
			"for v1beta1 and refuses it empty for v1",
		clientGo: regexp.MustCompile(`interactiveMode must be specified for [^ ]+ to use exec authentication plugin`),
		rewrite: func(entry []string) []string {
			i := slices.IndexFunc(entry, func(l string) bool { return strings.HasPrefix(l, "    exec:") })
			switch {
			case i < 0 || slices.ContainsFunc(entry, func(l string) bool { return strings.Contains(l, "interactiveMode:") }):
				return entry
			case strings.HasPrefix(entry[i], "    exec: {"): // a written case's flow mapping
				out := slices.Clone(entry)
				out[i] = strings.Replace(out[i], "{", "{interactiveMode: IfAvailable, ", 1)
				return out
			}
			return slices.Insert(slices.Clone(entry), i+1, "      interactiveMode: IfAvailable")
		},
	},
	{
		name: "bad base64 in an entry the context does not use",
		why: "kubeconfig.go, LoadKubeconfig's doc: `bad base64 in a cluster or user the context does not use " +
			"(only the chosen ones are decoded)`; clientcmd refuses the whole file",
		clientGo: regexp.MustCompile(`error loading config file "[^"]+": illegal base64 data at input byte \d+`),
		rewrite: func(entry []string) []string {
			out := slices.Clone(entry)
			for i, l := range out {
				out[i] = strings.Replace(l, `"`+badBase64+`"`, base64.StdEncoding.EncodeToString([]byte("unused")), 1)
			}
			return out
		},
	},
	{
		name: "YAML 1.1 booleans and numbers where strings belong",
		why: "kubeconfig.go, LoadKubeconfig's doc: `an unquoted YAML 1.1 boolean or number where a string " +
			"belongs (its text: namespace: off is \"off\")` (go.yaml.in/yaml/v2 decodes straight into string " +
			"fields); clientcmd's sigs.k8s.io/yaml turns it into a JSON bool or number first and refuses the file",
		clientGo: regexp.MustCompile(`error loading config file "[^"]+": json: cannot unmarshal (bool|number) into Go struct field [^ ]+ of type string`),
		rewrite: func(entry []string) []string {
			out := slices.Clone(entry)
			for i, l := range out {
				out[i] = yaml11Scalar.ReplaceAllString(l, `$1"$2"$3`)
			}
			return out
		},
	},
}

// yaml11Scalar matches an unquoted flow scalar that YAML 1.1 reads as a
// bool or a number.
var yaml11Scalar = regexp.MustCompile(`([:\[,] ?)(y|n|yes|no|on|off|[0-9]+(?:\.[0-9]+)?)([,}\]]|$)`)

// clientGoErrorShape is what is left of a clientcmd error once every
// reading's match is cut out of it: its aggregate's punctuation.
var clientGoErrorShape = regexp.MustCompile(`^(invalid configuration: )?\[?(, )*\]?$`)

// readingsFor returns the readings that explain why clientcmd refused a
// kubeconfig that listwatch took: each of clientcmd's errors must be one
// of theirs.
func readingsFor(cg, lw outcome) ([]*reading, bool) {
	if cg.stage != "config" || lw.stage == "config" {
		return nil, false
	}
	rest := cg.err.Error()
	var rs []*reading
	for i := range readings {
		if readings[i].clientGo.MatchString(rest) {
			rs = append(rs, &readings[i])
			rest = readings[i].clientGo.ReplaceAllString(rest, "")
		}
	}
	return rs, len(rs) > 0 && clientGoErrorShape.MatchString(rest)
}

// rewrite returns s with its files rewritten by rs, and whether that
// changed any. Relative paths in them still name the same files: each copy
// stays in its original's folder, under another name.
func (s *scenario) rewrite(t *testing.T, rs []*reading) (*scenario, bool) {
	t.Helper()
	out := *s
	out.files = nil
	changed := false
	for _, f := range s.files {
		data, err := os.ReadFile(f)
		if err != nil {
			out.files = append(out.files, f+".missing") // missing still
			continue
		}
		lines := strings.Split(string(data), "\n")
		var rewritten []string
		for entry := range entries(lines) {
			for _, r := range rs {
				entry = r.rewrite(entry)
			}
			rewritten = append(rewritten, entry...)
		}
		if slices.Equal(rewritten, lines) {
			out.files = append(out.files, f)
			continue
		}
		name := filepath.Join(filepath.Dir(f), "rewritten-"+filepath.Base(f))
		if err := os.WriteFile(name, []byte(strings.Join(rewritten, "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		out.files = append(out.files, name)
		changed = true
	}
	return &out, changed
}

// entries yields a generated kubeconfig's lines in runs: each top-level
// line with the indented ones that follow it.
func entries(lines []string) func(func([]string) bool) {
	return func(yield func([]string) bool) {
		start := 0
		for i := 1; i <= len(lines); i++ {
			if i == len(lines) || !strings.HasPrefix(lines[i], " ") {
				if !yield(lines[start:i:i]) {
					return
				}
				start = i
			}
		}
	}
}

// hasField reports whether an entry sets field (at the indentation of a
// cluster's or user's fields).
func hasField(entry []string, field string) bool {
	return slices.ContainsFunc(entry, func(l string) bool { return strings.HasPrefix(l, "    "+field+":") })
}

func dropField(entry []string, field string) []string {
	return slices.DeleteFunc(slices.Clone(entry), func(l string) bool { return strings.HasPrefix(l, "    "+field+":") })
}

// checkDifferencesSeen fails when an expected difference never showed:
// the tables must not keep entries the cases do not need.
func (e *env) checkDifferencesSeen(t *testing.T) {
	t.Helper()
	var names []string
	for _, r := range refusals {
		names = append(names, r.name)
	}
	for _, r := range readings {
		names = append(names, r.name)
	}
	names = append(names, clientGoIgnoresDisableCompression)
	for _, name := range names {
		if e.seen[name] == 0 {
			t.Errorf("expected difference %q never showed in %d cases; drop it or generate kubeconfigs that show it", name, e.runs.Load())
		} else {
			t.Logf("expected difference %q: %d cases", name, e.seen[name])
		}
	}
	t.Logf("cases by client-go's stage/listwatch's: %v", e.stages)
}
