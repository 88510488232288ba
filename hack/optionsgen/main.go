// Command optionsgen derives everything about the profiles' options from
// their one declaration, the option structs of pkg/apis/advisor/v1alpha1
// (ProfileOptions and the structs it reaches) with their markers:
//
//	+default=<json>                    the default (defaulter-gen applies it)
//	+k8s:validation:minimum=<int>      inclusive bounds of an integer option
//	+k8s:validation:maximum=<int>
//	+k8s:validation:enum=<json list>   the values of a string option
//
// It writes the internal option types (package advisor), the checks of the
// bounds and values (package validation), the fuzzer's filling of defaulted
// fields (package fuzzer) and the options table of each profile's docs page
// (docs/profiles/<profile>.md, between its markers). hack/update-codegen.sh
// runs it before the other generators; hack/verify-codegen.sh fails on a
// stale output. It reads source only, so it runs whatever state the
// generated files are in.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/printer"
	"go/token"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// option is one field of an options struct.
type option struct {
	goName, jsonName, goType string
	doc                      []string // without markers
	defaultValue             string   // JSON, "" when none
	minimum, maximum         *int64
	enum                     []string
	pointer                  bool
	// nested is the options struct the field holds (ksmConfiguration).
	nested string
}

// optionStruct is ProfileOptions or a struct it reaches.
type optionStruct struct {
	name   string
	doc    []string
	fields []option
}

// block is a field of ProfileOptions: one profile's options.
type block struct {
	goName, jsonName, structName, profile string
}

var profileInDoc = regexp.MustCompile(`tunes the ([a-z0-9-]+) profile`)

func main() {
	root := flag.String("root", ".", "the repository")
	flag.Parse()
	if err := generate(*root); err != nil {
		log.Fatal(err)
	}
}

// generate writes every output of the declaration in the repository at
// root.
func generate(root string) error {
	structs, order, err := parseStructs(filepath.Join(root, "pkg/apis/advisor/v1alpha1/types.go"))
	if err != nil {
		return err
	}
	blocks, err := blocksOf(structs["ProfileOptions"])
	if err != nil {
		return err
	}
	outputs := map[string][]byte{
		"pkg/apis/advisor/zz_generated.options.go":            internalTypes(structs, order),
		"pkg/apis/advisor/validation/zz_generated.options.go": validationCode(structs, order, blocks),
		"pkg/apis/advisor/fuzzer/zz_generated.options.go":     fuzzerCode(structs, order),
	}
	for path, src := range outputs {
		formatted, err := format.Source(src)
		if err != nil {
			return fmt.Errorf("%s: %w\n%s", path, err, src)
		}
		if err := os.WriteFile(filepath.Join(root, path), formatted, 0o644); err != nil {
			return err
		}
	}
	for _, b := range blocks {
		if err := writeDocsTable(root, b, structs); err != nil {
			return err
		}
	}
	return nil
}

// parseStructs reads ProfileOptions and every struct of the file it reaches,
// in the order they are reached.
func parseStructs(file string) (map[string]*optionStruct, []string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
	if err != nil {
		return nil, nil, err
	}
	decls := map[string]*ast.GenDecl{}
	specs := map[string]*ast.TypeSpec{}
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				decls[ts.Name.Name], specs[ts.Name.Name] = gd, ts
			}
		}
	}
	structs := map[string]*optionStruct{}
	var order []string
	var visit func(name string) error
	visit = func(name string) error {
		if structs[name] != nil {
			return nil
		}
		ts, ok := specs[name]
		if !ok {
			return fmt.Errorf("%s: no type %s", file, name)
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return fmt.Errorf("%s: %s is no struct", file, name)
		}
		s := &optionStruct{name: name, doc: docLines(decls[name].Doc)}
		structs[name] = s
		order = append(order, name)
		for _, fld := range st.Fields.List {
			o, err := parseField(fset, fld)
			if err != nil {
				return fmt.Errorf("%s.%v: %w", name, fld.Names, err)
			}
			if _, local := specs[o.nested]; local {
				if err := visit(o.nested); err != nil {
					return err
				}
			} else {
				o.nested = ""
			}
			s.fields = append(s.fields, o)
		}
		return nil
	}
	return structs, order, visit("ProfileOptions")
}

// parseField reads a field's type, JSON name, doc and markers.
func parseField(fset *token.FileSet, fld *ast.Field) (option, error) {
	if len(fld.Names) != 1 || fld.Tag == nil {
		return option{}, fmt.Errorf("an option is one named field with a JSON tag")
	}
	tag, _ := strconv.Unquote(fld.Tag.Value)
	jsonTag := regexp.MustCompile(`json:"([^",]+)`).FindStringSubmatch(tag)
	if jsonTag == nil {
		return option{}, fmt.Errorf("no JSON name in %q", tag)
	}
	var typ bytes.Buffer
	if err := printer.Fprint(&typ, fset, fld.Type); err != nil {
		return option{}, err
	}
	o := option{goName: fld.Names[0].Name, jsonName: jsonTag[1], goType: typ.String()}
	o.pointer = strings.HasPrefix(o.goType, "*")
	o.nested = strings.TrimPrefix(o.goType, "*")
	return o, o.readMarkers(fld.Doc)
}

// readMarkers splits the field's comment into its doc and its markers.
func (o *option) readMarkers(doc *ast.CommentGroup) error {
	for _, line := range commentText(doc) {
		marker, value, _ := strings.Cut(strings.TrimPrefix(line, "+"), "=")
		var err error
		switch {
		case !strings.HasPrefix(line, "+"):
			o.doc = append(o.doc, line)
		case marker == "default":
			o.defaultValue = value
		case marker == "k8s:validation:minimum":
			o.minimum, err = parseInt(value)
		case marker == "k8s:validation:maximum":
			o.maximum, err = parseInt(value)
		case marker == "k8s:validation:enum":
			err = json.Unmarshal([]byte(value), &o.enum)
		}
		if err != nil {
			return fmt.Errorf("marker %s: %w", line, err)
		}
	}
	return nil
}

func parseInt(s string) (*int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	return &v, err
}

// commentText is the comment's lines without the comment markers.
func commentText(doc *ast.CommentGroup) []string {
	if doc == nil {
		return nil
	}
	var out []string
	for _, c := range doc.List {
		out = append(out, strings.TrimPrefix(strings.TrimPrefix(c.Text, "//"), " "))
	}
	return out
}

// docLines is a type's doc without markers.
func docLines(doc *ast.CommentGroup) []string {
	var out []string
	for _, l := range commentText(doc) {
		if !strings.HasPrefix(l, "+") {
			out = append(out, l)
		}
	}
	return out
}

// blocksOf are ProfileOptions' fields, each naming its profile in its doc
// ("<block> tunes the <profile> profile.").
func blocksOf(po *optionStruct) ([]block, error) {
	var out []block
	for _, f := range po.fields {
		m := profileInDoc.FindStringSubmatch(strings.Join(f.doc, " "))
		if m == nil || f.nested == "" {
			return nil, fmt.Errorf("ProfileOptions.%s: a block is a pointer to an options struct, its doc says %q", f.goName, "<block> tunes the <profile> profile.")
		}
		out = append(out, block{goName: f.goName, jsonName: f.jsonName, structName: f.nested, profile: m[1]})
	}
	return out, nil
}

const header = "// Code generated by hack/optionsgen from the option structs of pkg/apis/advisor/v1alpha1. DO NOT EDIT.\n\n"

// internalTypes are the option structs of the internal API: the same
// fields as v1alpha1's, without tags and markers.
func internalTypes(structs map[string]*optionStruct, order []string) []byte {
	var b bytes.Buffer
	b.WriteString(header + "package advisor\n\n")
	b.WriteString("import metav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n\nvar _ metav1.LabelSelector\n\n")
	for _, name := range order {
		s := structs[name]
		writeComment(&b, "", s.doc)
		fmt.Fprintf(&b, "type %s struct {\n", name)
		for _, f := range s.fields {
			writeComment(&b, "\t", f.doc)
			fmt.Fprintf(&b, "\t%s %s\n", f.goName, f.goType)
		}
		b.WriteString("}\n\n")
	}
	return b.Bytes()
}

func writeComment(b *bytes.Buffer, indent string, lines []string) {
	for _, l := range lines {
		fmt.Fprintf(b, "%s// %s\n", indent, l)
	}
}
