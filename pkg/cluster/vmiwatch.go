package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// vmiListWatch lists and watches VirtualMachineInstances through a raw
// client and decodes of each only what the VMI cache keeps (vmiItem),
// straight into a CachedVMI. Decoded whole into an unstructured object
// first, as the dynamic client does, every VMI event left hundreds of
// small objects of garbage, among which the few the cache keeps were
// scattered: with 10 000 VMIs the heap kept three times the cache in use.
type vmiListWatch struct {
	raw rest.Interface
	gvr schema.GroupVersionResource
}

// IsWatchListSemanticsUnSupported: the informer lists, then watches (the
// list is decoded as leanly as the events).
func (lw *vmiListWatch) IsWatchListSemanticsUnSupported() bool { return true }

func (lw *vmiListWatch) request(opts *metav1.ListOptions) *rest.Request {
	return lw.raw.Get().AbsPath(path.Join("/apis", lw.gvr.Group, lw.gvr.Version, lw.gvr.Resource)).
		SpecificallyVersionedParams(opts, metav1.ParameterCodec, metav1.SchemeGroupVersion).
		SetHeader("Accept", "application/json")
}

// ListWithContext lists the VMIs as a *CachedVMIList.
func (lw *vmiListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	body, err := lw.request(&opts).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	var list vmiList
	if err := jsonv2.UnmarshalRead(body, &list); err != nil {
		return nil, fmt.Errorf("reading the list of VirtualMachineInstances: %w", err)
	}
	out := &CachedVMIList{ListMeta: metav1.ListMeta{ResourceVersion: list.Metadata.ResourceVersion, Continue: list.Metadata.Continue},
		Items: make([]*CachedVMI, len(list.Items))}
	for i := range list.Items {
		out.Items[i] = newCachedVMI(list.Items[i].Metadata.ResourceVersion, list.Items[i].vmi())
	}
	return out, nil
}

// List is ListWithContext without a context (cache.ListerWatcher).
func (lw *vmiListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

// Watch is WatchWithContext without a context (cache.ListerWatcher).
func (lw *vmiListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

// WatchWithContext watches the VMIs; each event's object is a *CachedVMI
// (a bookmark's holds only its resourceVersion), an error's a
// *metav1.Status.
func (lw *vmiListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	body, err := lw.request(&opts).Stream(ctx)
	if err != nil {
		return nil, err
	}
	events := &vmiEvents{body: body, dec: jsontext.NewDecoder(body)}
	return heldWatch(ctx, watch.NewStreamWatcher(events, apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding"))), nil
}

// vmiEvents decodes a watch stream of VMIs (watch.Decoder).
type vmiEvents struct {
	body io.ReadCloser
	dec  *jsontext.Decoder
}

// Decode reads the next event: {"type": ..., "object": ...}.
func (e *vmiEvents) Decode() (watch.EventType, runtime.Object, error) {
	tok, err := e.dec.ReadToken()
	if err != nil {
		return "", nil, err // io.EOF at the end of the stream
	}
	if tok.Kind() != '{' {
		return "", nil, fmt.Errorf("a watch event is an object, not %v", tok.Kind())
	}
	typ, obj, raw, err := e.fields()
	if err != nil {
		return "", nil, err
	}
	if _, err := e.dec.ReadToken(); err != nil { // '}'
		return "", nil, unexpectedEOF(err)
	}
	switch {
	case obj != nil:
		return typ, obj, nil
	case raw == nil:
		return "", nil, fmt.Errorf("a watch event of type %q without an object", typ)
	case typ == watch.Error:
		status := &metav1.Status{}
		if err := json.Unmarshal(raw, status); err != nil {
			return "", nil, fmt.Errorf("reading the error of a watch of VirtualMachineInstances: %w", err)
		}
		return typ, status, nil
	}
	obj, err = e.decodeVMI(raw)
	return typ, obj, err
}

// fields reads the fields of an event up to its end: its type, and its
// object, read into a VMI at once when the type came first and is not an
// error, else kept raw. Names and the type are compared raw: no garbage
// per event.
func (e *vmiEvents) fields() (typ watch.EventType, obj runtime.Object, raw jsontext.Value, err error) {
	for e.dec.PeekKind() != '}' {
		name, err := e.dec.ReadValue()
		if err != nil {
			return "", nil, nil, unexpectedEOF(err)
		}
		switch string(name) {
		case `"type"`:
			v, err := e.dec.ReadValue()
			if err != nil {
				return "", nil, nil, unexpectedEOF(err)
			}
			if typ, err = eventType(v); err != nil {
				return "", nil, nil, err
			}
		case `"object"`:
			if typ == "" || typ == watch.Error {
				if raw, err = e.dec.ReadValue(); err != nil {
					return "", nil, nil, unexpectedEOF(err)
				}
				raw = slices.Clone(raw)
			} else if obj, err = e.decodeVMI(nil); err != nil {
				return "", nil, nil, err
			}
		default:
			if err := e.dec.SkipValue(); err != nil {
				return "", nil, nil, unexpectedEOF(err)
			}
		}
	}
	return typ, obj, raw, nil
}

// eventType reads the type of a watch event from its raw JSON string.
func eventType(v jsontext.Value) (watch.EventType, error) {
	for _, t := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error} {
		if len(v) == len(t)+2 && string(v[1:len(v)-1]) == string(t) {
			return t, nil
		}
	}
	var t string
	if err := jsonv2.Unmarshal(v, &t); err != nil {
		return "", fmt.Errorf("the type of a watch event: %w", err)
	}
	return watch.EventType(t), nil
}

// decodeVMI reads a VMI from raw or, when nil, from the stream.
func (e *vmiEvents) decodeVMI(raw jsontext.Value) (*CachedVMI, error) {
	var item vmiItem
	var err error
	if raw == nil {
		err = unexpectedEOF(jsonv2.UnmarshalDecode(e.dec, &item))
	} else {
		err = jsonv2.Unmarshal(raw, &item)
	}
	if err != nil {
		return nil, fmt.Errorf("reading a VirtualMachineInstance of a watch: %w", err)
	}
	return newCachedVMI(item.Metadata.ResourceVersion, item.vmi()), nil
}

// Close ends the stream.
func (e *vmiEvents) Close() { _ = e.body.Close() }

// unexpectedEOF is io.ErrUnexpectedEOF for a stream that ended inside an
// event (the watch ends quietly, as a cut connection does).
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// CachedVMIList is a list of VMIs as the VMI cache keeps them.
type CachedVMIList struct {
	metav1.ListMeta
	Items []*CachedVMI
}

// GetListMeta is what the informer reads the list's resourceVersion from.
func (l *CachedVMIList) GetListMeta() metav1.ListInterface { return &l.ListMeta }

// GetObjectKind: the list holds one kind.
func (l *CachedVMIList) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the list (its items are never modified).
func (l *CachedVMIList) DeepCopyObject() runtime.Object {
	return &CachedVMIList{ListMeta: *l.ListMeta.DeepCopy(), Items: slices.Clone(l.Items)}
}
