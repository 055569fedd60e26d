package apisim

// Compact makes every resourceVersion older than the current one
// unreadable, as an etcd compaction at the current revision followed by
// the loss of the watch cache's window: lists at an older exact RV and
// continue tokens of older snapshots get 410 Expired, and watches resuming
// from an older RV get the 410 ERROR event. The current state, and reads
// and watches from the current RV, are unaffected.
func (s *Server) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.collections {
		c.compactedRV, c.watchStart = s.rv, s.rv
		c.hist.clear()
		c.store.pruneAll(s.rv)
	}
}

// Restart simulates a kube-apiserver restart in front of the same etcd:
// every watch ends (cleanly, as with a graceful shutdown) and the watch
// cache's history is lost. As on a real server, whose watch cache is
// rebuilt from a fresh LIST of etcd, resourceVersions keep increasing, a
// watch may resume only from the current RV or newer (older ones get the
// 410 ERROR event), while paging and exact reads of older snapshots still
// work until compaction, since etcd still has them.
func (s *Server) Restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.collections {
		c.stopWatchers()
		c.hist.clear()
		c.watchStart = s.rv
	}
}

// DropEvents makes the next n events of res vanish in transit: they are
// stored and kept in the history (a watch resuming from an older RV gets
// them), but the watchers open now and until then never see them.
func (s *Server) DropEvents(res Resource, n int) error {
	c, err := s.collection(res)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.dropNext += n
	return nil
}

// Watchers returns the number of open watches on res.
func (s *Server) Watchers(res Resource) int {
	c, err := s.collection(res)
	if err != nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(c.watchers)
}

// countKey identifies a request counter.
type countKey struct {
	verb     Verb
	group    string
	resource string // as Match.Resource: "pods", "pods/status", "namespaces/finalize"
}

func (s *Server) countRequest(v Verb, group, resource string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[countKey{v, group, resource}]++
}

// Requests returns how many requests with verb on res reached the server
// (faulted ones included), e.g. to assert that a client did not relist.
// Those to a subresource are counted apart: SubresourceRequests.
func (s *Server) Requests(verb Verb, res Resource) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.counts[countKey{verb, res.Group, res.Resource}])
}

// SubresourceRequests returns how many requests with verb on the
// subresource sub of res's objects ("status"; "finalize" of Namespaces,
// VerbUpdate only; "approval" of CertificateSigningRequests) reached the
// server, faulted ones included. Each request
// counts once, under the one path it took: a write to a subresource is
// not also a write to the resource.
func (s *Server) SubresourceRequests(verb Verb, res Resource, sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.counts[countKey{verb, res.Group, res.Resource + "/" + sub}])
}

// StatusRequests is SubresourceRequests(verb, res, "status"): how many
// requests with verb (VerbGet, VerbUpdate) on the status subresource of
// res's objects reached the server, faulted ones included.
func (s *Server) StatusRequests(verb Verb, res Resource) int {
	return s.SubresourceRequests(verb, res, "status")
}

// Len returns the number of objects of res that exist now.
func (s *Server) Len(res Resource) (int, error) {
	c, err := s.collection(res)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.store.len(), nil
}
