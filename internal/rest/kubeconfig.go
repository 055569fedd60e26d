package rest

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v2"
)

// maxKubeconfigSize bounds how much of a kubeconfig file is read.
const maxKubeconfigSize = 16 << 20

// LoadKubeconfig reads a kubeconfig and returns the Config of one of its
// contexts, with the context's namespace in Config.Namespace.
//
// path names the file. When it is empty, $KUBECONFIG is used: a list of
// files separated by ':' (';' on Windows) of which the missing ones are
// skipped and the others merged, the first file that defines a cluster,
// user, context or current-context winning. When $KUBECONFIG is empty too,
// ~/.kube/config is read. An error wrapping ErrNoKubeconfig means none of
// those exists, or those that exist are empty (no current-context, no
// cluster, user or context: an image may ship an empty ~/.kube/config),
// so the caller may fall back to InClusterConfig, as client-go does; a
// path named but missing or empty is an error wrapping fs.ErrNotExist, or
// saying what it lacks, as for kubectl (a mistyped path must not send the
// caller to another cluster).
//
// contextName picks the context; empty means the current-context. Relative
// file paths inside a kubeconfig are relative to that file's directory.
// Errors name the file and the context, cluster or user at fault, and never
// include a credential.
//
// It refuses what kubectl refuses, and more: a server without a scheme
// (kubectl picks one silently), a context naming a user that is not
// defined (kubectl sends no credentials then), and, over http://, what
// NewClient refuses (kubectl ignores a user's credentials and the
// cluster's TLS settings there). It reads four things kubectl refuses: a
// token beside a password without a username (the token is sent; a
// password alone is never sent), an exec plugin of
// client.authentication.k8s.io/v1 without interactiveMode (IfAvailable),
// bad base64 in a cluster or user the context does not use (only the
// chosen ones are decoded), and an unquoted YAML 1.1 boolean or number
// where a string belongs (its text: namespace: off is "off").
// internal/e2e/kubeconfigdiff checks all of this against client-go.
func LoadKubeconfig(path, contextName string) (*Config, error) {
	files, err := kubeconfigFiles(path, os.Getenv, os.UserHomeDir)
	if err != nil {
		return nil, err
	}
	return loadKubeconfigFiles(files, contextName, path == "")
}

// kubeconfigFiles returns the existing kubeconfig files to merge, in order.
func kubeconfigFiles(path string, getenv func(string) string, home func() (string, error)) ([]string, error) {
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
		}
		return []string{path}, nil
	}
	if list := getenv("KUBECONFIG"); list != "" {
		var files []string
		seen := map[string]bool{}
		for _, f := range filepath.SplitList(list) {
			if f == "" || seen[f] {
				continue
			}
			seen[f] = true
			if _, err := os.Stat(f); err == nil {
				files = append(files, f)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("kubeconfig %s (from $KUBECONFIG): %w", f, err)
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%w: none of the files in $KUBECONFIG (%s) exists", ErrNoKubeconfig, list)
		}
		return files, nil
	}
	dir, err := home()
	if err != nil {
		return nil, fmt.Errorf("%w: $KUBECONFIG is empty and the home directory is unknown: %w", ErrNoKubeconfig, err)
	}
	f := filepath.Join(dir, ".kube", "config")
	if _, err := os.Stat(f); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: $KUBECONFIG is empty and %s does not exist", ErrNoKubeconfig, f)
		}
		return nil, fmt.Errorf("kubeconfig %s: %w", f, err)
	}
	return []string{f}, nil
}

// loadKubeconfigFiles parses and merges files, then resolves contextName.
// Files found rather than named (found) that define nothing are no
// kubeconfig (ErrNoKubeconfig), unless a context was named.
func loadKubeconfigFiles(files []string, contextName string, found bool) (*Config, error) {
	merged := &kubeconfig{
		clusters: map[string]kubeCluster{},
		users:    map[string]kubeUser{},
		contexts: map[string]kubeContext{},
	}
	for _, name := range files {
		data, err := readFileLimited(name, maxKubeconfigSize)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", name, err)
		}
		dir, err := filepath.Abs(filepath.Dir(name)) // a later chdir must not move the files it names
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", name, err)
		}
		kc, err := parseKubeconfig(data, dir)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", name, err)
		}
		merged.mergeFrom(kc)
	}
	if found && contextName == "" && merged.empty() {
		return nil, fmt.Errorf("%w: %s set no current-context and define no cluster, user or context",
			ErrNoKubeconfig, strings.Join(files, string(filepath.ListSeparator)))
	}
	cfg, err := merged.config(contextName)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", strings.Join(files, string(filepath.ListSeparator)), err)
	}
	return cfg, nil
}

func readFileLimited(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, limit)
}

// readLimited reads f to its end, failing past limit bytes.
func readLimited(f *os.File, limit int64) ([]byte, error) {
	data, err := io.ReadAll(LimitReader(f, limit))
	if errors.Is(err, ErrBodyTooLarge) {
		return nil, fmt.Errorf("file larger than %d bytes", limit)
	}
	return data, err
}

// The kubeconfig format (apiVersion v1, kind Config), the fields this
// package understands. Unknown fields are ignored.
type kubeconfigFile struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string      `yaml:"name"`
		Cluster kubeCluster `yaml:"cluster"`
	} `yaml:"clusters"`
	Users []struct {
		Name string   `yaml:"name"`
		User kubeUser `yaml:"user"`
	} `yaml:"users"`
	Contexts []struct {
		Name    string      `yaml:"name"`
		Context kubeContext `yaml:"context"`
	} `yaml:"contexts"`
}

type kubeCluster struct {
	Server                   string `yaml:"server"`
	CertificateAuthority     string `yaml:"certificate-authority"`
	CertificateAuthorityData string `yaml:"certificate-authority-data"`
	InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify"`
	TLSServerName            string `yaml:"tls-server-name"`
	ProxyURL                 string `yaml:"proxy-url"`
	DisableCompression       bool   `yaml:"disable-compression"`
	Extensions               []struct {
		Name      string `yaml:"name"`
		Extension any    `yaml:"extension"`
	} `yaml:"extensions"`
}

// execExtension is the cluster's configuration for exec plugins (the
// extension client.authentication.k8s.io/exec) as JSON, or nil.
func (c *kubeCluster) execExtension() (json.RawMessage, error) {
	for _, e := range c.Extensions {
		if e.Name != "client.authentication.k8s.io/exec" {
			continue
		}
		v, err := jsonValue(e.Extension)
		if err != nil {
			return nil, fmt.Errorf("extension %s: %w", e.Name, err)
		}
		return json.Marshal(v)
	}
	return nil, nil
}

// jsonKey turns a YAML map key into a JSON object's, as sigs.k8s.io/yaml
// does for kubectl: {1: a} is {"1": "a"}.
func jsonKey(k any) (string, bool) {
	switch k := k.(type) {
	case string:
		return k, true
	case int:
		return strconv.Itoa(k), true
	case int64:
		return strconv.FormatInt(k, 10), true
	case float64:
		switch s := strconv.FormatFloat(k, 'g', -1, 32); s {
		case "+Inf":
			return ".inf", true
		case "-Inf":
			return "-.inf", true
		case "NaN":
			return ".nan", true
		default:
			return s, true
		}
	case bool:
		return strconv.FormatBool(k), true
	}
	return "", false
}

// jsonValue turns a value decoded from YAML into one JSON can encode: maps
// with string keys.
func jsonValue(v any) (any, error) {
	switch v := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			s, ok := jsonKey(k)
			if !ok {
				return nil, fmt.Errorf("key %v is not a string", k)
			}
			var err error
			if m[s], err = jsonValue(e); err != nil {
				return nil, err
			}
		}
		return m, nil
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			var err error
			if s[i], err = jsonValue(e); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
	return v, nil
}

type kubeUser struct {
	Token                 string    `yaml:"token"`
	TokenFile             string    `yaml:"tokenFile"`
	ClientCertificate     string    `yaml:"client-certificate"`
	ClientCertificateData string    `yaml:"client-certificate-data"`
	ClientKey             string    `yaml:"client-key"`
	ClientKeyData         string    `yaml:"client-key-data"`
	Username              string    `yaml:"username"`
	Password              string    `yaml:"password"`
	Exec                  *kubeExec `yaml:"exec"`
	AuthProvider          *struct {
		Name string `yaml:"name"`
	} `yaml:"auth-provider"`
	Impersonate       string              `yaml:"as"`
	ImpersonateUID    string              `yaml:"as-uid"`
	ImpersonateGroups []string            `yaml:"as-groups"`
	ImpersonateExtra  map[string][]string `yaml:"as-user-extra"`
}

type kubeExec struct {
	Command string   `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	APIVersion         string `yaml:"apiVersion"`
	InstallHint        string `yaml:"installHint"`
	ProvideClusterInfo bool   `yaml:"provideClusterInfo"`
	InteractiveMode    string `yaml:"interactiveMode"`
}

type kubeContext struct {
	Cluster   string `yaml:"cluster"`
	User      string `yaml:"user"`
	Namespace string `yaml:"namespace"`
}

// kubeconfig is one or more parsed files, merged by name.
type kubeconfig struct {
	currentContext string
	clusters       map[string]kubeCluster
	users          map[string]kubeUser
	contexts       map[string]kubeContext
}

// withoutValues is a YAML error without the values its type errors quote
// ("line 8: cannot unmarshal !!str `--clien...` into []string"), which
// may be a secret: a value quoted holds backticks of its own, so what is
// dropped runs from the first backtick to the last before " into ".
func withoutValues(err error) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err.Error()
	}
	msgs := make([]string, len(te.Errors))
	for i, e := range te.Errors {
		a, b := strings.IndexByte(e, '`'), strings.LastIndex(e, "` into ")
		switch {
		case a >= 0 && b > a:
			e = e[:a] + "`...`" + e[b+1:]
		case a >= 0:
			e = e[:a] + "`...`"
		}
		msgs[i] = e
	}
	return "yaml: unmarshal errors:\n  " + strings.Join(msgs, "\n  ")
}

// parseKubeconfig parses one file's bytes; dir resolves relative paths.
// A name defined twice within one file is an error, as for kubectl (across
// files, the first file wins).
func parseKubeconfig(data []byte, dir string) (*kubeconfig, error) {
	var f kubeconfigFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("invalid YAML: %s", withoutValues(err))
	}
	kc := &kubeconfig{
		currentContext: f.CurrentContext,
		clusters:       map[string]kubeCluster{},
		users:          map[string]kubeUser{},
		contexts:       map[string]kubeContext{},
	}
	for _, c := range f.Clusters {
		if _, dup := kc.clusters[c.Name]; dup {
			return nil, fmt.Errorf("cluster %q is defined twice", c.Name)
		}
		c.Cluster.CertificateAuthority = resolvePath(dir, c.Cluster.CertificateAuthority)
		kc.clusters[c.Name] = c.Cluster
	}
	for _, u := range f.Users {
		if _, dup := kc.users[u.Name]; dup {
			return nil, fmt.Errorf("user %q is defined twice", u.Name)
		}
		u.User.TokenFile = resolvePath(dir, u.User.TokenFile)
		u.User.ClientCertificate = resolvePath(dir, u.User.ClientCertificate)
		u.User.ClientKey = resolvePath(dir, u.User.ClientKey)
		if e := u.User.Exec; e != nil && strings.ContainsRune(e.Command, filepath.Separator) {
			// "./bin/plugin" is relative to the kubeconfig; "plugin" is
			// looked up in PATH.
			e.Command = resolvePath(dir, e.Command)
		}
		kc.users[u.Name] = u.User
	}
	for _, c := range f.Contexts {
		if _, dup := kc.contexts[c.Name]; dup {
			return nil, fmt.Errorf("context %q is defined twice", c.Name)
		}
		kc.contexts[c.Name] = c.Context
	}
	return kc, nil
}

func resolvePath(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// mergeFrom adds what other defines and kc does not: the first file wins.
func (kc *kubeconfig) mergeFrom(other *kubeconfig) {
	if kc.currentContext == "" {
		kc.currentContext = other.currentContext
	}
	for name, c := range other.clusters {
		if _, ok := kc.clusters[name]; !ok {
			kc.clusters[name] = c
		}
	}
	for name, u := range other.users {
		if _, ok := kc.users[name]; !ok {
			kc.users[name] = u
		}
	}
	for name, c := range other.contexts {
		if _, ok := kc.contexts[name]; !ok {
			kc.contexts[name] = c
		}
	}
}

// empty reports a kubeconfig that defines nothing.
func (kc *kubeconfig) empty() bool {
	return kc.currentContext == "" && len(kc.clusters) == 0 && len(kc.users) == 0 && len(kc.contexts) == 0
}

// config builds the Config of the named context, or of the current one.
func (kc *kubeconfig) config(contextName string) (*Config, error) {
	if contextName == "" {
		contextName = kc.currentContext
		if contextName == "" {
			return nil, errors.New("no current-context is set; name a context")
		}
	}
	ctx, ok := kc.contexts[contextName]
	if !ok {
		return nil, fmt.Errorf("context %q not found", contextName)
	}
	if ctx.Cluster == "" {
		return nil, fmt.Errorf("context %q names no cluster", contextName)
	}
	cluster, ok := kc.clusters[ctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("context %q refers to cluster %q, which is not defined", contextName, ctx.Cluster)
	}
	var user kubeUser
	if ctx.User != "" {
		if user, ok = kc.users[ctx.User]; !ok {
			return nil, fmt.Errorf("context %q refers to user %q, which is not defined", contextName, ctx.User)
		}
	}

	cfg := &Config{Namespace: cmp.Or(ctx.Namespace, "default")} // as kubectl, and as in a pod
	if err := cluster.apply(cfg); err != nil {
		return nil, fmt.Errorf("cluster %q: %w", ctx.Cluster, err)
	}
	if err := user.apply(cfg); err != nil {
		return nil, fmt.Errorf("user %q: %w", ctx.User, err)
	}
	if cfg.Exec != nil {
		ext, err := cluster.execExtension()
		if err != nil {
			return nil, fmt.Errorf("cluster %q: %w", ctx.Cluster, err)
		}
		cfg.Exec.ClusterConfig = ext
	}
	return cfg, nil
}

func (c *kubeCluster) apply(cfg *Config) error {
	if c.Server == "" {
		return errors.New("server is empty")
	}
	if !strings.Contains(c.Server, "://") && !strings.ContainsAny(c.Server, "@ \t\r\n") {
		// "10.0.0.1:6443": no scheme, and no user info to hide. kubectl
		// would pick http:// silently; say what to write instead.
		return fmt.Errorf("server %q has no scheme; write https://%s", c.Server, c.Server)
	}
	u, err := url.Parse(c.Server)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("server %q is not an http:// or https:// URL", redactURL(c.Server))
	}
	cfg.Host = c.Server
	cfg.TLS.ServerName = c.TLSServerName
	cfg.TLS.Insecure = c.InsecureSkipTLSVerify
	cfg.ProxyURL = c.ProxyURL
	cfg.DisableCompression = c.DisableCompression
	if c.CertificateAuthorityData != "" && c.CertificateAuthority != "" {
		// kubectl refuses this too: which one was meant is a guess.
		return errors.New("certificate-authority-data and certificate-authority are both set; keep one")
	}
	if c.CertificateAuthorityData != "" {
		if cfg.TLS.CAData, err = decodeBase64(c.CertificateAuthorityData); err != nil {
			return fmt.Errorf("certificate-authority-data: %w", err)
		}
	} else {
		cfg.TLS.CAFile = c.CertificateAuthority
	}
	return nil
}

func (u *kubeUser) apply(cfg *Config) error {
	var err error
	if u.AuthProvider != nil {
		hint := "use an exec credential plugin"
		switch u.AuthProvider.Name {
		case "gcp":
			hint = "use the exec plugin gke-gcloud-auth-plugin (gcloud components install gke-gcloud-auth-plugin, then gcloud container clusters get-credentials)"
		case "azure":
			hint = "use the exec plugin kubelogin (kubelogin convert-kubeconfig)"
		case "oidc":
			hint = "use an OIDC exec plugin such as kubelogin (kubectl oidc-login)"
		}
		return fmt.Errorf("auth-provider %q is not supported; %s", u.AuthProvider.Name, hint)
	}
	if u.Impersonate == "" && (u.ImpersonateUID != "" || len(u.ImpersonateGroups) > 0 || len(u.ImpersonateExtra) > 0) {
		// The apiserver refuses them without a user to act as.
		return errors.New("as-uid, as-groups or as-user-extra is set without as (the user to impersonate)")
	}
	cfg.Impersonate = ImpersonationConfig{
		UserName: u.Impersonate,
		UID:      u.ImpersonateUID,
		Groups:   u.ImpersonateGroups,
		Extra:    u.ImpersonateExtra,
	}
	cfg.BearerToken = u.Token
	cfg.BearerTokenFile = u.TokenFile
	if u.Username != "" {
		// As kubectl: basic auth needs a username (client-go's
		// HasBasicAuth); a password alone sends nothing, and leaves an
		// exec plugin to run.
		cfg.Username, cfg.Password = u.Username, u.Password
	}
	// kubectl refuses a data field beside its file too: which one was
	// meant is a guess.
	if u.ClientCertificateData != "" && u.ClientCertificate != "" {
		return errors.New("client-certificate-data and client-certificate are both set; keep one")
	}
	if u.ClientKeyData != "" && u.ClientKey != "" {
		return errors.New("client-key-data and client-key are both set; keep one")
	}
	if u.ClientCertificateData != "" {
		if cfg.TLS.CertData, err = decodeBase64(u.ClientCertificateData); err != nil {
			return fmt.Errorf("client-certificate-data: %w", err)
		}
	} else {
		cfg.TLS.CertFile = u.ClientCertificate
	}
	if u.ClientKeyData != "" {
		if cfg.TLS.KeyData, err = decodeBase64(u.ClientKeyData); err != nil {
			return fmt.Errorf("client-key-data: %w", err)
		}
	} else {
		cfg.TLS.KeyFile = u.ClientKey
	}
	if u.ClientCertificateData == "" && u.ClientCertificate == "" {
		// As kubectl: a client key without a certificate is ignored (it
		// would otherwise fail NewClient, and keep an exec plugin from
		// running). Bad base64 in it is an error all the same, as there.
		cfg.TLS.KeyData, cfg.TLS.KeyFile = nil, ""
	}
	if e := u.Exec; e != nil {
		cfg.Exec = &ExecConfig{
			Command:            e.Command,
			Args:               e.Args,
			APIVersion:         e.APIVersion,
			InstallHint:        e.InstallHint,
			ProvideClusterInfo: e.ProvideClusterInfo,
			InteractiveMode:    e.InteractiveMode,
		}
		for _, v := range e.Env {
			cfg.Exec.Env = append(cfg.Exec.Env, ExecEnvVar{Name: v.Name, Value: v.Value})
		}
	}
	return nil
}

// decodeBase64 decodes a kubeconfig data field. Its error never quotes the
// input.
func decodeBase64(s string) ([]byte, error) {
	s = strings.Join(strings.Fields(s), "")
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("not valid base64")
	}
	return b, nil
}
