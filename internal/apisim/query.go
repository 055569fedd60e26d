package apisim

import (
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/internal/apistatus"
	"github.com/listwatch/listwatch/internal/kinds"
)

// query is a parsed, validated list or watch request.
type query struct {
	internalversion.ListOptions
	filter filter
}

// filter selects the objects a list or watch returns.
type filter struct {
	namespace string // "" for every namespace
	name      string // "" for every name
	labels    labels.Selector
	fields    fields.Selector
}

func (f filter) matches(v *version) bool {
	if f.name != "" && v.name != f.name {
		return false
	}
	if f.namespace != "" && v.namespace != f.namespace {
		return false
	}
	return f.labels.Matches(v.labels) && f.fields.Matches(v.fields)
}

// empty reports whether the filter selects everything in its scope (the
// case where kube-apiserver reports remainingItemCount).
func (f filter) empty() bool {
	return f.name == "" && f.labels.Empty() && f.fields.Empty()
}

// parseQuery decodes the query parameters the way kube-apiserver does:
// same parameter codec, same defaults (watches from "" or "0" send initial
// events, as with the WatchList feature on since 1.34), same validation
// messages (422 Invalid for bad combinations), and field selectors limited
// to the resource's supported fields (400 BadRequest otherwise).
func (s *Server) parseQuery(r *http.Request, req request) (*query, error) {
	q := &query{}
	if err := s.paramCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &q.ListOptions); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if req.watchPath {
		q.Watch = true
	}
	internalversion.SetListOptionsDefaults(&q.ListOptions, true)
	if errs := validation.ValidateListOptions(&q.ListOptions, true); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	if q.LabelSelector == nil {
		q.LabelSelector = labels.Everything()
	}
	if q.FieldSelector == nil {
		q.FieldSelector = fields.Everything()
	}
	gr := req.c.res.GroupResource()
	fs, err := q.FieldSelector.Transform(func(label, value string) (string, string, error) {
		return kinds.ConvertFieldLabel(gr, label, value)
	})
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	q.FieldSelector = fs
	q.filter = filter{namespace: req.namespace, name: req.name, labels: q.LabelSelector, fields: fs}
	if req.name != "" && !fs.Empty() {
		if n, ok := fs.RequiresExactMatch("metadata.name"); !ok || n != req.name {
			return nil, apierrors.NewBadRequest("fieldSelector metadata.name doesn't match requested name")
		}
	}
	return q, nil
}

// parseRV parses a resourceVersion parameter; "" and "0" are 0. A value
// that is not a decimal number gets kube-apiserver's answer: a 400 to a
// list, a 500 to a watch or a GET (forWatch).
func parseRV(rv string, forWatch bool) (uint64, error) {
	if rv == "" || rv == "0" {
		return 0, nil
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0, apistatus.InvalidResourceVersion(rv, err, forWatch)
	}
	return n, nil
}
