// Package tableaccess finds, by static analysis of the module's Lambda
// functions, which DynamoDB item actions and which indexes of the table each
// function's code can reach. infra's tests compare it with the grants the
// stack gives each function (infra/grants.go), so that a function's role
// allows exactly the table calls its code can make.
//
// The analysis loads functions/... with golang.org/x/tools (go/packages and
// SSA), narrows the program to what the functions' main packages reach
// (RTA), builds the call graph by variable type analysis (VTA) on that part,
// then walks it from each function's main. The table is reached only through
// shared/store, so a call counts when a function of shared/store, or the
// SDK's own code it uses (a paginator, a waiter), calls a method of the SDK's
// *dynamodb.Client (the connector relay's calls reach the connector's own
// table, granted apart); a call from any other package fails the analysis. IAM authorises TransactWriteItems per
// item, so a reachable transaction counts as the item kinds the reachable code
// of shared/store builds (types.TransactWriteItem's Put, Update, Delete and
// ConditionCheck). A Query counts on an index when the reachable code of
// shared/store names the index, and on the table itself when it builds a
// QueryInput without an IndexName.
package tableaccess

import (
	"fmt"
	"go/constant"
	"go/token"
	"go/types"
	"path"
	"slices"
	"strings"

	"golang.org/x/tools/go/callgraph"
	"golang.org/x/tools/go/callgraph/rta"
	"golang.org/x/tools/go/callgraph/vta"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"
)

const (
	modulePath  = "github.com/maasflow/maasflow"
	storePkg    = modulePath + "/shared/store"
	dynamodbPkg = "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbTypesPkg = dynamodbPkg + "/types"
	lambdaPkg   = "github.com/aws/aws-lambda-go/lambda"
	relayPkg    = modulePath + "/shared/connector/sqsrelay"
	// FunctionsPattern is the package pattern of the functions' main packages.
	FunctionsPattern = "./functions/..."
)

// transactItemKinds maps a field of types.TransactWriteItem to the IAM action
// that authorises that item of a TransactWriteItems call.
var transactItemKinds = map[string]string{
	"Put":            "dynamodb:PutItem",
	"Update":         "dynamodb:UpdateItem",
	"Delete":         "dynamodb:DeleteItem",
	"ConditionCheck": "dynamodb:ConditionCheckItem",
}

// transactGetKinds is the same for TransactGetItems.
var transactGetKinds = map[string]string{"Get": "dynamodb:GetItem"}

// Access is what one function's code can do to the table.
type Access struct {
	// Items are the IAM actions on the table's items, sorted. A Query
	// counts here only when it reads the table itself (no index).
	Items []string
	// Indexes are the names of the indexes the function queries, sorted.
	Indexes []string
	// Why holds, for each item action and each "index <name>", a chain of
	// calls from the function's main to the code that needs it.
	Why map[string]string

	by map[string]*ssa.Function
}

// Analyze loads the functions' main packages under dir (the module root)
// and returns each function's access, keyed by its directory name under
// functions/. indexes are the table's index names.
func Analyze(dir string, indexes []string) (map[string]Access, error) {
	cfg := &packages.Config{Mode: packages.LoadAllSyntax, Dir: dir}
	initial, err := packages.Load(cfg, FunctionsPattern)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", FunctionsPattern, err)
	}
	var loadErrs []string
	packages.Visit(initial, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			loadErrs = append(loadErrs, e.Error())
		}
	})
	if len(loadErrs) > 0 {
		return nil, fmt.Errorf("load %s: %s", FunctionsPattern, strings.Join(loadErrs, "; "))
	}
	prog, pkgs := ssautil.AllPackages(initial, ssa.InstantiateGenerics)
	prog.Build()

	mains := map[string]*ssa.Package{}
	var roots []*ssa.Function
	for _, p := range pkgs {
		if p == nil || p.Pkg.Name() != "main" {
			continue
		}
		mains[path.Base(p.Pkg.Path())] = p
		roots = append(roots, p.Func("init"), p.Func("main"))
	}
	if len(mains) == 0 {
		return nil, fmt.Errorf("no main package under %s in %s", FunctionsPattern, dir)
	}

	// RTA from every main narrows the program to the code the functions
	// can reach; VTA on that part tells which of it each one reaches. One
	// VTA for all the functions, rather than one per function, takes a
	// tenth of the time; with the walk kept out of aws-lambda-go (access)
	// it found the same access for every function as one VTA each did.
	reach := rta.Analyze(roots, true)
	funcs := make(map[*ssa.Function]bool, len(reach.Reachable))
	for f := range reach.Reachable {
		funcs[f] = true
	}
	cg := vta.CallGraph(funcs, reach.CallGraph)
	a := analyzer{prog: prog, cg: cg, indexes: indexes}
	out := map[string]Access{}
	for name, p := range mains {
		acc, err := a.access(p)
		if err != nil {
			return nil, err
		}
		out[name] = acc
	}
	return out, nil
}

type analyzer struct {
	prog    *ssa.Program
	cg      *callgraph.Graph
	indexes []string
}

// access walks the call graph from one main package's init and main.
//
// The walk does not enter aws-lambda-go/lambda: its dispatcher calls
// whatever handler it was given, and VTA, which does not tell one main's
// handler from another's of the same type, would let every function reach
// every handler. A value handed to it is a root instead: a function (the
// handler), or the methods of a value in an interface (an http.Handler). A
// handler the walk cannot follow is an error, never a function that reaches
// nothing.
func (a *analyzer) access(p *ssa.Package) (Access, error) {
	parent := map[*ssa.Function]*ssa.Function{}
	seen := map[*ssa.Function]bool{}
	var queue []*ssa.Function
	visit := func(f, from *ssa.Function) {
		if f != nil && !seen[f] {
			seen[f] = true
			parent[f] = from
			queue = append(queue, f)
		}
	}
	visit(p.Func("init"), nil)
	visit(p.Func("main"), nil)

	ops := map[string]*ssa.Function{}
	var storeFuncs []*ssa.Function
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		inStore := pkgPath(f) == storePkg
		if inStore {
			storeFuncs = append(storeFuncs, f)
		}
		node := a.cg.Nodes[f]
		if node == nil {
			continue
		}
		for _, e := range node.Out {
			callee := e.Callee.Func
			if pkgPath(callee) == lambdaPkg {
				for _, arg := range e.Site.Common().Args {
					roots := a.handed(arg, 0)
					if len(roots) == 0 && runsCode(arg) {
						return Access{}, fmt.Errorf("%s: %s hands %s %s to %s, which the analysis does not follow",
							p.Pkg.Path(), shortName(f), arg.Name(), arg.Type(), shortName(callee))
					}
					for _, r := range roots {
						visit(r, f)
					}
				}
				continue
			}
			if isClientMethod(callee) && token.IsExported(callee.Name()) && !isClientMethod(f) {
				switch pkgPath(f) {
				case storePkg, dynamodbPkg:
					// The store's calls, and those the SDK's paginators
					// and waiters make for it.
					if ops[callee.Name()] == nil {
						ops[callee.Name()] = f
					}
				case relayPkg:
					// The connector's own table, granted apart.
				default:
					// Code whose table calls the analysis does not read
					// (which items, which index): an error, never a
					// function that reaches less than it does.
					return Access{}, fmt.Errorf("%s: %s calls %s outside shared/store, which the analysis does not follow",
						p.Pkg.Path(), shortName(f), shortName(callee))
				}
			}
			visit(callee, f)
		}
	}
	acc := a.summarize(ops, storeFuncs)
	// Each finding's witness: the calls from main to the function of
	// shared/store that makes it.
	for what, f := range acc.by {
		var chain []string
		for ; f != nil; f = parent[f] {
			chain = append(chain, shortName(f))
		}
		slices.Reverse(chain)
		acc.Why[what] = strings.Join(chain, " → ")
	}
	acc.by = nil
	return acc, nil
}

// runsCode reports whether a value handed to aws-lambda-go may hold code:
// a function or an interface (the options, a slice, hold none).
func runsCode(v ssa.Value) bool {
	switch v.Type().Underlying().(type) {
	case *types.Signature, *types.Interface:
		return true
	}
	return false
}

// shortName is f's name without the module's path.
func shortName(f *ssa.Function) string {
	return strings.ReplaceAll(f.String(), modulePath+"/", "")
}

// handed is the code a value handed to aws-lambda-go may run: a function,
// a closure, the methods of a value in an interface, or what a call
// returns (lambdaurl.Wrap's closure).
func (a *analyzer) handed(v ssa.Value, depth int) []*ssa.Function {
	if depth > 8 {
		return nil
	}
	switch v := v.(type) {
	case *ssa.Call:
		var out []*ssa.Function
		if node := a.cg.Nodes[v.Parent()]; node != nil {
			for _, e := range node.Out {
				if e.Site != ssa.CallInstruction(v) {
					continue
				}
				for _, b := range e.Callee.Func.Blocks {
					if ret, ok := b.Instrs[len(b.Instrs)-1].(*ssa.Return); ok && len(ret.Results) == 1 {
						r := ret.Results[0]
						got := a.handed(r, depth+1)
						if c, isConst := r.(*ssa.Const); len(got) == 0 && runsCode(r) && (!isConst || !c.IsNil()) {
							// One path returns code the analysis cannot
							// tell: no answer rather than the other paths'.
							return nil
						}
						out = append(out, got...)
					}
				}
			}
		}
		return out
	case *ssa.Function:
		return []*ssa.Function{v}
	case *ssa.MakeClosure:
		return []*ssa.Function{v.Fn.(*ssa.Function)}
	case *ssa.MakeInterface:
		if _, ok := v.X.Type().Underlying().(*types.Signature); ok {
			return a.handed(v.X, depth+1)
		}
		var out []*ssa.Function
		ms := a.prog.MethodSets.MethodSet(v.X.Type())
		for i := range ms.Len() {
			out = append(out, a.prog.MethodValue(ms.At(i)))
		}
		return out
	case *ssa.Slice:
		// Options (variadic arguments) run no code of the function.
		return nil
	}
	return nil
}

// summarize turns the client methods called (each with the function of
// shared/store that calls it) and the store's reachable code into IAM
// actions and indexes, each with the function of shared/store it comes from.
func (a *analyzer) summarize(ops map[string]*ssa.Function, storeFuncs []*ssa.Function) Access {
	items := map[string]*ssa.Function{}
	indexes := map[string]*ssa.Function{}
	add := func(m map[string]*ssa.Function, k string, f *ssa.Function) {
		if m[k] == nil {
			m[k] = f
		}
	}
	for op, f := range ops {
		switch op {
		case "TransactWriteItems", "TransactGetItems", "Query":
			// Below, from what the reachable code builds.
		default:
			add(items, "dynamodb:"+op, f)
		}
	}
	for _, f := range storeFuncs {
		for _, b := range f.Blocks {
			for _, ins := range b.Instrs {
				if fa, ok := ins.(*ssa.FieldAddr); ok {
					field := structField(fa)
					if ops["TransactWriteItems"] != nil && isNamed(pointee(fa.X.Type()), ddbTypesPkg, "TransactWriteItem") && transactItemKinds[field] != "" {
						add(items, transactItemKinds[field], f)
					}
					if ops["TransactGetItems"] != nil && isNamed(pointee(fa.X.Type()), ddbTypesPkg, "TransactGetItem") && transactGetKinds[field] != "" {
						add(items, transactGetKinds[field], f)
					}
				}
				if ops["Query"] == nil {
					continue
				}
				if al, ok := ins.(*ssa.Alloc); ok && isNamed(pointee(al.Type()), dynamodbPkg, "QueryInput") && !setsField(al, "IndexName") {
					add(items, "dynamodb:Query", f)
				}
				if f.Name() != "Indexes" {
					for _, ix := range a.namedIndexes(ins) {
						add(indexes, ix, f)
					}
				}
			}
		}
	}
	acc := Access{Why: map[string]string{}, by: map[string]*ssa.Function{}}
	for k, f := range items {
		acc.Items = append(acc.Items, k)
		acc.by[k] = f
	}
	for k, f := range indexes {
		acc.Indexes = append(acc.Indexes, k)
		acc.by["index "+k] = f
	}
	slices.Sort(acc.Items)
	slices.Sort(acc.Indexes)
	return acc
}

// namedIndexes are the index names an instruction's constant operands hold.
// store.Indexes, the schema's list, is left out by the caller: it names
// every index and queries none.
func (a *analyzer) namedIndexes(ins ssa.Instruction) []string {
	var out []string
	for _, op := range ins.Operands(nil) {
		c, ok := (*op).(*ssa.Const)
		if !ok || c.Value == nil || c.Value.Kind() != constant.String {
			continue
		}
		if s := constant.StringVal(c.Value); slices.Contains(a.indexes, s) {
			out = append(out, s)
		}
	}
	return out
}

// setsField reports whether the code stores to the named field of the
// struct that alloc allocates (a composite literal's fields).
func setsField(alloc *ssa.Alloc, name string) bool {
	for _, ref := range *alloc.Referrers() {
		if fa, ok := ref.(*ssa.FieldAddr); ok && structField(fa) == name {
			return true
		}
	}
	return false
}

func structField(fa *ssa.FieldAddr) string {
	st, ok := pointee(fa.X.Type()).Underlying().(*types.Struct)
	if !ok {
		return ""
	}
	return st.Field(fa.Field).Name()
}

func pointee(t types.Type) types.Type {
	if p, ok := t.Underlying().(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}

func isNamed(t types.Type, pkg, name string) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == pkg && n.Obj().Name() == name
}

// isClientMethod reports whether f is a method of *dynamodb.Client.
func isClientMethod(f *ssa.Function) bool {
	recv := f.Signature.Recv()
	return recv != nil && isNamed(pointee(recv.Type()), dynamodbPkg, "Client")
}

func pkgPath(f *ssa.Function) string {
	if f == nil {
		return ""
	}
	if f.Pkg != nil {
		return f.Pkg.Pkg.Path()
	}
	if o := f.Origin(); o != nil && o.Pkg != nil {
		return o.Pkg.Pkg.Path()
	}
	if obj := f.Object(); obj != nil && obj.Pkg() != nil {
		return obj.Pkg().Path()
	}
	return ""
}
