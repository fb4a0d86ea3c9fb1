// sdkgen writes the TypeScript and Go SDKs of a Pulumi package schema, as `pulumi package add`
// generates them into a program's sdks/ folder.
//
// The CLI asks a language host for an SDK (GeneratePackage), and the hosts for TypeScript and Go
// (pulumi-language-nodejs, pulumi-language-go) are refused by the module proxy. The code that
// writes the SDKs is not in the hosts but in github.com/pulumi/pulumi/pkg/v3/codegen/{nodejs,go},
// which the proxy serves: this program calls it the way `pulumi package add` has it called, with
// the schema marked as a packable local package (meta.supportPack, a local SDK).
//
//	sdkgen -schema components/schema.json -out DIR [-lang nodejs,go]
//
// writes DIR/nodejs and DIR/go and prints each directory.
//
//	sdkgen -schema components/schema.json -print-spec
//
// prints the schema as Pulumi reads it (its schema.PackageSpec, indented JSON): what
// `pulumi package get-schema` prints for a provider that serves this schema.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/blang/semver"

	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	tsgen "github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

const tool = "flux-minicluster-sdkgen"

// noLoader refuses every package reference: a component schema that refers to another
// package's types would need that package's plugin, which this program does not run.
type noLoader struct{}

func (noLoader) refuse(name string) error {
	return fmt.Errorf("the schema refers to package %q; sdkgen loads no other package", name)
}

func (l noLoader) LoadPackage(pkg string, _ *semver.Version) (*schema.Package, error) {
	return nil, l.refuse(pkg)
}

func (l noLoader) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return nil, l.refuse(d.Name)
}

func (l noLoader) LoadPackageReference(pkg string, _ *semver.Version) (schema.PackageReference, error) {
	return nil, l.refuse(pkg)
}

func (l noLoader) LoadPackageReferenceV2(
	_ context.Context, d *schema.PackageDescriptor,
) (schema.PackageReference, error) {
	return nil, l.refuse(d.Name)
}

// bind reads the schema and binds it as a local, packable package (what `package add` does).
func bind(path string) (*schema.Package, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if spec.Meta == nil {
		spec.Meta = &schema.MetadataSpec{}
	}
	spec.Meta.SupportPack = true
	pkg, diags, err := schema.BindSpec(spec, noLoader{}, schema.ValidationOptions{})
	if err != nil {
		return nil, err
	}
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s: %s", path, diags.Error())
	}
	return pkg, nil
}

func generate(lang, schemaPath string) (map[string][]byte, error) {
	// Each generator records its language's settings on the package: bind afresh for each.
	pkg, err := bind(schemaPath)
	if err != nil {
		return nil, err
	}
	switch lang {
	case "nodejs":
		return tsgen.GeneratePackage(tool, pkg, nil, nil, true, noLoader{})
	case "go":
		return gogen.GeneratePackage(tool, pkg, nil)
	}
	return nil, fmt.Errorf("unknown language %q (nodejs, go)", lang)
}

func write(dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// printSpec writes the schema as `pulumi package get-schema` does: decoded into a PackageSpec
// and encoded again (fields the schema format does not have, nulls and empty lists drop out).
func printSpec(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	out, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(append(out, '\n'))
	return err
}

func run() error {
	schemaPath := flag.String("schema", "", "the package schema (JSON), e.g. components/schema.json")
	out := flag.String("out", "", "directory to write <out>/<language> into")
	langs := flag.String("lang", "nodejs,go", "comma-separated languages: nodejs, go")
	spec := flag.Bool("print-spec", false, "print the schema as Pulumi reads it, write no SDK")
	flag.Parse()
	if *schemaPath == "" || flag.NArg() != 0 || (*out == "") == !*spec {
		flag.Usage()
		return errors.New("-schema and one of -out, -print-spec are required")
	}
	if *spec {
		return printSpec(*schemaPath)
	}
	for _, lang := range strings.Split(*langs, ",") {
		files, err := generate(lang, *schemaPath)
		if err != nil {
			return fmt.Errorf("%s SDK: %w", lang, err)
		}
		dir := filepath.Join(*out, lang)
		if err := write(dir, files); err != nil {
			return fmt.Errorf("%s SDK: %w", lang, err)
		}
		fmt.Println(dir)
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "sdkgen: %v\n", err)
		os.Exit(1)
	}
}
