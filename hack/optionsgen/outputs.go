package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// validationCode checks each options struct's bounds and values, and
// lists them for the profiles and the admission policy's constants.
func validationCode(structs map[string]*optionStruct, order []string, blocks []block) []byte {
	var b bytes.Buffer
	b.WriteString(header + "package validation\n\n")
	b.WriteString("import (\n\t\"k8s.io/apimachinery/pkg/util/validation/field\"\n\n\t\"github.com/kubevirt/virt-advisor/pkg/apis/advisor\"\n)\n\n")
	b.WriteString("// declaredChecks check each block's bounds and values as its markers declare them.\n")
	b.WriteString("var declaredChecks = map[string]func(*advisor.ProfileOptions, *field.Path) field.ErrorList{\n")
	for _, bl := range blocks {
		fmt.Fprintf(&b, "\t%q: func(o *advisor.ProfileOptions, p *field.Path) field.ErrorList { return validate%s(o.%s, p) },\n", bl.jsonName, bl.structName, bl.goName)
	}
	b.WriteString("}\n\n")
	b.WriteString("// blockNames are the JSON names of ProfileOptions' blocks, by their Go names.\n")
	b.WriteString("var blockNames = map[string]string{\n")
	for _, bl := range blocks {
		fmt.Fprintf(&b, "\t%q: %q,\n", bl.goName, bl.jsonName)
	}
	b.WriteString("}\n\n")
	ranges, enums := declaredValues(structs, blocks)
	b.WriteString("// declaredRanges are the integer options' bounds, by their path under spec.options.\n")
	b.WriteString("var declaredRanges = map[string]Range{\n" + ranges + "}\n\n")
	b.WriteString("// declaredEnums are the string options' values, by their path under spec.options.\n")
	b.WriteString("var declaredEnums = map[string][]string{\n" + enums + "}\n\n")
	for _, name := range order[1:] {
		writeStructCheck(&b, structs[name])
	}
	return b.Bytes()
}

// declaredValues are the entries of declaredRanges and declaredEnums.
func declaredValues(structs map[string]*optionStruct, blocks []block) (ranges, enums string) {
	var r, e strings.Builder
	var walk func(prefix string, s *optionStruct)
	walk = func(prefix string, s *optionStruct) {
		for _, f := range s.fields {
			path := prefix + "." + f.jsonName
			if f.minimum != nil && f.maximum != nil {
				fmt.Fprintf(&r, "\t%q: {Min: %d, Max: %d},\n", path, *f.minimum, *f.maximum)
			}
			if len(f.enum) > 0 {
				fmt.Fprintf(&e, "\t%q: %#v,\n", path, f.enum)
			}
			if f.nested != "" {
				walk(path, structs[f.nested])
			}
		}
	}
	for _, bl := range blocks {
		walk(bl.jsonName, structs[bl.structName])
	}
	return r.String(), e.String()
}

func writeStructCheck(b *bytes.Buffer, s *optionStruct) {
	fmt.Fprintf(b, "func validate%s(o *advisor.%s, fldPath *field.Path) field.ErrorList {\n\tif o == nil {\n\t\treturn nil\n\t}\n\tvar errs field.ErrorList\n", s.name, s.name)
	for _, f := range s.fields {
		p := fmt.Sprintf("fldPath.Child(%q)", f.jsonName)
		switch {
		case f.minimum != nil && f.maximum != nil:
			fmt.Fprintf(b, "\terrs = append(errs, validateBounds(%s, o.%s, %d, %d)...)\n", p, f.goName, *f.minimum, *f.maximum)
		case len(f.enum) > 0:
			fmt.Fprintf(b, "\terrs = append(errs, validateEnum(%s, string(o.%s), %#v)...)\n", p, f.goName, f.enum)
		case f.nested != "":
			fmt.Fprintf(b, "\terrs = append(errs, validate%s(o.%s, %s)...)\n", f.nested, f.goName, p)
		}
	}
	b.WriteString("\treturn errs\n}\n\n")
}

// fuzzerCode gives the fields that may be defaulted a value the round trip
// keeps: a nil pointer or an empty string with a default would be
// defaulted on decoding.
func fuzzerCode(structs map[string]*optionStruct, order []string) []byte {
	var b bytes.Buffer
	b.WriteString(header + "package fuzzer\n\n")
	b.WriteString("import \"github.com/kubevirt/virt-advisor/pkg/apis/advisor\"\n\n")
	for _, name := range order {
		s := structs[name]
		fmt.Fprintf(&b, "func fillDefaulted%s(o *advisor.%s) {\n\tif o == nil {\n\t\treturn\n\t}\n", name, name)
		for _, f := range s.fields {
			switch {
			case f.nested != "":
				fmt.Fprintf(&b, "\tfillDefaulted%s(o.%s)\n", f.nested, f.goName)
			case f.pointer && scalar(f.goType):
				// Pointers are defaulted when nil, by a marker or by
				// SetDefaults (memoryToRequestRatio).
				fmt.Fprintf(&b, "\tif o.%s == nil {\n\t\to.%s = new(%s)\n\t}\n", f.goName, f.goName, strings.TrimPrefix(f.goType, "*"))
			case f.goType == "string" && f.defaultValue != "":
				fmt.Fprintf(&b, "\tif o.%s == \"\" {\n\t\to.%s = %s\n\t}\n", f.goName, f.goName, f.defaultValue)
			}
		}
		b.WriteString("}\n\n")
	}
	return b.Bytes()
}

func scalar(goType string) bool {
	switch strings.TrimPrefix(goType, "*") {
	case "bool", "int32", "int64", "string":
		return true
	}
	return false
}

// The options table of a profile's docs page sits between these lines.
const (
	docsStart = "<!-- GENERATED from the options' declaration by hack/update-codegen.sh: do not edit. -->\n"
	docsEnd   = "<!-- END GENERATED -->"
)

// writeDocsTable rewrites the options table of docs/profiles/<profile>.md;
// a page without the table's lines is left alone (docs tests require them).
func writeDocsTable(root string, bl block, structs map[string]*optionStruct) error {
	file := filepath.Join(root, "docs/profiles", bl.profile+".md")
	raw, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		return err
	}
	s := string(raw)
	from, to := strings.Index(s, docsStart), strings.Index(s, docsEnd)
	if from < 0 || to < from {
		return nil
	}
	var t strings.Builder
	t.WriteString(docsStart)
	fmt.Fprintf(&t, "`spec.options.%s` (`kubectl explain virtplatformconfig.spec.options.%[1]s`); a value outside its range or values is a 422 naming the field.\n\n", bl.jsonName)
	t.WriteString("| option | values | default | what |\n|---|---|---|---|\n")
	tableRows(&t, "", structs[bl.structName], structs)
	t.WriteString("\n")
	return os.WriteFile(file, []byte(s[:from]+t.String()+s[to:]), 0o644)
}

func tableRows(t *strings.Builder, prefix string, s *optionStruct, structs map[string]*optionStruct) {
	for _, f := range s.fields {
		values := "–"
		switch {
		case f.minimum != nil && f.maximum != nil:
			values = fmt.Sprintf("%d..%d", *f.minimum, *f.maximum)
		case len(f.enum) > 0:
			values = "`" + strings.Join(f.enum, "`, `") + "`"
		}
		def := "–"
		if f.defaultValue != "" {
			if v, err := strconv.Unquote(f.defaultValue); err == nil {
				def = "`" + v + "`"
			} else {
				def = "`" + f.defaultValue + "`"
			}
		}
		what := strings.Join(f.doc, " ")
		fmt.Fprintf(t, "| `%s%s` | %s | %s | %s |\n", prefix, f.jsonName, values, def, strings.ReplaceAll(what, "|", "\\|"))
		if f.nested != "" {
			tableRows(t, prefix+f.jsonName+".", structs[f.nested], structs)
		}
	}
}
