package apisim

import (
	"encoding/json"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiversion "k8s.io/apimachinery/pkg/version"
)

// The discovery documents are the legacy (unaggregated) ones, built from
// the registered resources: enough for a client to find a resource, its
// kind and whether it is namespaced.

// serveDiscovery answers /api, /api/v1, /apis, /apis/{g} and /apis/{g}/{v}.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion) {
	legacy := strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/api"
	switch {
	case legacy && gv.Version == "":
		host := s.listenerAddr()
		writeJSON(w, &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
			Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
				{ClientCIDR: "0.0.0.0/0", ServerAddress: host}},
		})
	case !legacy && gv.Group == "":
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: s.groups()}
		writeJSON(w, list)
	case !legacy && gv.Version == "":
		for _, g := range s.groups() {
			if g.Name == gv.Group {
				g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
				writeJSON(w, &g)
				return
			}
		}
		writeStatus(w, r, errNoSuchPath(), errorFormat(r))
	default:
		list := s.resourceList(gv)
		if list == nil {
			writeStatus(w, r, errNoSuchPath(), errorFormat(r))
			return
		}
		writeJSON(w, list)
	}
}

// groups returns the non-core API groups, sorted by name.
func (s *Server) groups() []metav1.APIGroup {
	s.mu.Lock()
	versions := map[string][]string{}
	for gvr := range s.collections {
		if gvr.Group != "" && !slices.Contains(versions[gvr.Group], gvr.Version) {
			versions[gvr.Group] = append(versions[gvr.Group], gvr.Version)
		}
	}
	s.mu.Unlock()
	var out []metav1.APIGroup
	for g, vs := range versions {
		slices.Sort(vs)
		group := metav1.APIGroup{Name: g}
		for _, v := range vs {
			group.Versions = append(group.Versions, metav1.GroupVersionForDiscovery{GroupVersion: g + "/" + v, Version: v})
		}
		group.PreferredVersion = group.Versions[0]
		out = append(out, group)
	}
	slices.SortFunc(out, func(a, b metav1.APIGroup) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// resourceList returns the APIResourceList of a group version, nil if no
// resource of it is registered.
func (s *Server) resourceList(gv schema.GroupVersion) *metav1.APIResourceList {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for gvr, c := range s.collections {
		if gvr.GroupVersion() != gv {
			continue
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name:         c.res.Resource,
			SingularName: strings.ToLower(c.res.Kind),
			Namespaced:   c.res.Namespaced,
			Kind:         c.res.Kind,
			Verbs:        metav1.Verbs{"create", "delete", "get", "list", "update", "watch"},
		})
	}
	if len(list.APIResources) == 0 {
		return nil
	}
	slices.SortFunc(list.APIResources, func(a, b metav1.APIResource) int { return strings.Compare(a.Name, b.Name) })
	return list
}

// serveVersion answers /version like a kube-apiserver v1.37.2.
func (s *Server) serveVersion(w http.ResponseWriter) {
	writeJSON(w, &apiversion.Info{
		Major: "1", Minor: "37", EmulationMajor: "1", EmulationMinor: "37",
		MinCompatibilityMajor: "1", MinCompatibilityMinor: "36",
		GitVersion: "v1.37.2", GitCommit: "0000000000000000000000000000000000000000", GitTreeState: "clean",
		BuildDate: "2026-01-01T00:00:00Z", GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	})
}

func (s *Server) listenerAddr() string {
	if s.listener == nil {
		return net.JoinHostPort("127.0.0.1", "0")
	}
	return s.listener.Addr().String()
}

func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", mediaJSON)
	_, _ = w.Write(append(body, '\n'))
}
