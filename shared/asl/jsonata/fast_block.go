package jsonata

// The fast path's blocks: `(expr; …)`, whose statements may bind local
// variables with `$name := expr`.

// block evaluates its statements in order in a scope of its own and gives
// the last one's value.
type block struct {
	stmts []statement
}

type statement struct {
	bind string // the variable a `:=` statement binds; "" for an expression
	expr fastNode
}

func compileBlock(node map[string]any) fastNode {
	if !only(node, "expressions") {
		return nil
	}
	exprs, _ := node["expressions"].([]any)
	if len(exprs) == 0 {
		return nil
	}
	if len(exprs) == 1 {
		if m, _ := exprs[0].(map[string]any); m["type"] != "bind" {
			return compileFast(m) // (expr): no scope is needed
		}
	}
	b := block{}
	for _, e := range exprs {
		m, _ := e.(map[string]any)
		st := statement{}
		if m["type"] == "bind" {
			// Only a statement of the block binds: a `:=` inside another
			// expression is not compiled, so the reference takes it.
			if !only(m, "value", "lhs", "rhs") {
				return nil
			}
			lhs, _ := m["lhs"].(map[string]any)
			name, _ := lhs["value"].(string)
			if lhs["type"] != "variable" || !only(lhs, "value") || name == "" || isFunctionName(name) {
				return nil // rebinding a function: the reference's scoping
			}
			st.bind = name
			m, _ = m["rhs"].(map[string]any)
		}
		if st.expr = compileFast(m); st.expr == nil {
			return nil
		}
		b.stmts = append(b.stmts, st)
	}
	return b
}

// isFunctionName: a name the fast path calls as a function.
func isFunctionName(name string) bool {
	_, native := natives[name]
	_, sf := stepFunctions[name]
	return native || sf
}

func (b block) eval(env Env, ctx any) (any, error) {
	scope := &frame{parent: env.Vars, vals: map[string]any{}, calls: callDepth(env.Vars)}
	env.Vars = scope
	v := undefined
	for _, st := range b.stmts {
		var err error
		if v, err = st.expr.eval(env, ctx); err != nil {
			return nil, err
		}
		if st.bind != "" {
			scope.vals[st.bind] = v // undefined too: it hides an outer one
		}
	}
	return v, nil
}

// frame is a block's scope over the variables around it.
type frame struct {
	parent Vars
	vals   map[string]any
	calls  int // lambda calls under way, to stop a runaway recursion
}

// callDepth is the number of lambda calls under way where vars is seen.
func callDepth(vars Vars) int {
	if f, isFrame := vars.(*frame); isFrame {
		return f.calls
	}
	return 0
}

func (f *frame) Var(name string) (any, bool) {
	if v, ok := f.vals[name]; ok {
		return v, true
	}
	if f.parent == nil {
		return nil, false
	}
	return f.parent.Var(name)
}
