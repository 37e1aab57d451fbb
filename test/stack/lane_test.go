package stack

import (
	"context"
	"crypto/sha1" //nolint:gosec // G505: names access keys, not security
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	schemas "github.com/maasflow/maasflow/events"
	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/clock"
)

// timeScale makes one simulated minute of MAAS and of the state machines'
// waits take 100 ms of wall time; the functions run on the wall clock.
const timeScale = 600

// laneAdminToken is the bearer token the API front accepts as a verified
// operator JWT: the lane stands in for the JWT authorizer, not for Cognito.
const laneAdminToken = "lane-operator-token"

// lane is one running copy of a template.
type lane struct {
	t        *testing.T
	tpl      *template
	res      *resolver
	iam      *policies
	aws      *awsEndpoint
	engine   *asl.Engine
	clk      clock.Clock
	fns      map[string]*lambdaFunction // by FunctionName
	byARN    map[string]*lambdaFunction
	roleOf   map[string]string // FunctionName → role logical ID
	machines map[string]string // StateMachineName → ARN
	sim      *maassim.Simulator
	simURL   string
	simSrv   *httptest.Server
	apiURL   string
	apiFn    *lambdaFunction
	routes   []route
	claims   map[string]string
	boot     bootstrapRef

	stop chan struct{}
	wg   sync.WaitGroup
}

type bootstrapRef struct{ URL, Version, SHA256, CABundle string }

type route struct {
	method  string
	pattern *regexp.Regexp
	key     string
	jwt     bool
	fn      *lambdaFunction
}

// startLane runs tpl. An error is a template the lane cannot run: a state
// machine's definition or substitution, a role that cannot invoke its
// tasks, a route without the api function.
func startLane(t *testing.T, tpl *template) (*lane, error) {
	t.Helper()
	l := &lane{t: t, tpl: tpl, fns: map[string]*lambdaFunction{}, byARN: map[string]*lambdaFunction{}, roleOf: map[string]string{},
		machines: map[string]string{}, stop: make(chan struct{})}
	t.Cleanup(l.close)

	l.clk = asl.NewLoadClock(timeScale)
	l.sim = maassim.New(maassim.Options{Clock: l.clk, SubnetCIDR: "10.10.0.0/20"})
	t.Cleanup(l.sim.Close)
	mux := http.NewServeMux()
	mux.Handle("/", l.sim)
	mux.HandleFunc("GET /_lane/site-bootstrap.sh", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(siteBootstrapScript))
	})
	// MAAS over https: the template requires it of the MAAS-facing functions.
	l.simSrv = httptest.NewTLSServer(mux)
	t.Cleanup(l.simSrv.Close)
	l.simURL = l.simSrv.URL + "/MAAS"
	caFile := filepath.Join(t.TempDir(), "lane-ca.pem")
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: l.simSrv.Certificate().Raw})
	trusted := append(append([]byte(nil), caPEM...), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: allocations.Certificate().Raw})...)
	if err := os.WriteFile(caFile, trusted, 0o600); err != nil {
		return nil, err
	}
	l.boot = bootstrapRef{URL: l.simSrv.URL + "/_lane/site-bootstrap.sh", Version: "lane-1", SHA256: sha256Hex(siteBootstrapScript),
		CABundle: string(caPEM)}

	apiSrv := httptest.NewServer(http.HandlerFunc(l.serveAPI))
	t.Cleanup(apiSrv.Close)
	l.apiURL = apiSrv.URL

	l.res = &resolver{t: tpl, apiEndpoint: l.apiURL,
		params: map[string]any{"JwtIssuer": laneIssuer.url, "JwtAudience": []any{"lane-cli"}, "BootstrapVersion": "21"}}
	var err error
	if l.iam, err = loadPolicies(l.res); err != nil {
		return nil, err
	}
	l.aws = newAWSEndpoint(l.iam)
	l.aws.secrets[allocationSecret] = allocationToken
	awsSrv := httptest.NewServer(l.aws)
	t.Cleanup(awsSrv.Close)
	if err := l.createTables(); err != nil {
		return nil, err
	}
	if err := l.startFunctions(awsSrv.URL, caFile); err != nil {
		return nil, err
	}
	tasks := map[string]asl.TaskHandler{}
	for arn, f := range l.byARN {
		tasks[arn] = &taskFunction{f: f, l: l}
	}
	l.engine = asl.NewEngine(asl.Options{Clock: l.clk, Tasks: tasks, Region: laneRegion, AccountID: laneAccount,
		InvokeClock: clock.Real(), FunctionConcurrency: 4})
	l.aws.engine = l.engine
	if err := l.createStateMachines(); err != nil {
		return nil, err
	}
	if err := l.loadRoutes(); err != nil {
		return nil, err
	}
	if err := l.startSchedules(); err != nil {
		return nil, err
	}
	return l, nil
}

const siteBootstrapScript = "#!/bin/sh\n# maasflow stack lane: nothing to prepare on a simulated node.\nexit 0\n"

func (l *lane) close() {
	select {
	case <-l.stop:
		return
	default:
	}
	close(l.stop)
	l.wg.Wait()
	var wg sync.WaitGroup
	for _, f := range l.fns {
		wg.Add(1)
		go func() { defer wg.Done(); f.close() }()
	}
	wg.Wait()
}

// createTables creates every AWS::DynamoDB::Table as declared: keys,
// attributes and global secondary indexes.
func (l *lane) createTables() error {
	admin := httptest.NewServer(l.aws.dynamo)
	l.t.Cleanup(admin.Close)
	client := dynamodb.New(dynamodb.Options{Region: laneRegion, BaseEndpoint: aws.String(admin.URL),
		Credentials: credentials.NewStaticCredentialsProvider("LANEADMIN", "x", "")})
	for _, id := range l.tpl.ofType("AWS::DynamoDB::Table") {
		props, err := l.res.resolve(l.tpl.Resources[id].Properties)
		if err != nil {
			return fmt.Errorf("table %s: %w", id, err)
		}
		p := props.(map[string]any)
		keep := map[string]any{}
		for _, k := range []string{"TableName", "KeySchema", "AttributeDefinitions", "GlobalSecondaryIndexes", "BillingMode"} {
			if v, ok := p[k]; ok {
				keep[k] = v
			}
		}
		keep["TableName"] = l.res.named(id, "TableName")
		b, _ := json.Marshal(keep)
		var in dynamodb.CreateTableInput
		if err := json.Unmarshal(b, &in); err != nil {
			return fmt.Errorf("table %s: %w", id, err)
		}
		declared := map[string]bool{}
		for _, gsi := range in.GlobalSecondaryIndexes {
			declared[aws.ToString(gsi.IndexName)] = true
		}
		if l.aws.indexes == nil {
			l.aws.indexes = map[string]map[string]bool{}
		}
		l.aws.indexes[aws.ToString(in.TableName)] = declared
		if _, err := client.CreateTable(context.Background(), &in); err != nil {
			return fmt.Errorf("create table %s: %w", id, err)
		}
	}
	return nil
}

// startFunctions prepares every AWS::Lambda::Function: its asset's
// bootstrap, its environment and an access key of its own.
func (l *lane) startFunctions(endpoint, caFile string) error {
	for _, id := range l.tpl.ofType("AWS::Lambda::Function") {
		r := l.tpl.Resources[id]
		name := l.res.named(id, "FunctionName")
		code, _ := r.Properties["Code"].(map[string]any)
		key, _ := code["S3Key"].(string)
		bin, ok := assetBinary(strings.TrimSuffix(key, ".zip"))
		if !ok {
			return fmt.Errorf("function %s: no asset %s in cdk.out", name, key)
		}
		envAny, err := l.res.resolve(r.Properties["Environment"])
		if err != nil {
			return fmt.Errorf("function %s environment: %w", name, err)
		}
		vars, _ := envAny.(map[string]any)["Variables"].(map[string]any)
		roleRef, _ := r.Properties["Role"].(map[string]any)["Fn::GetAtt"].([]any)
		if len(roleRef) != 2 {
			return fmt.Errorf("function %s: the role is not a role of the template", name)
		}
		role := roleRef[0].(string)
		sum := sha1.Sum([]byte(name)) //nolint:gosec // G401: a name, not security
		accessKey := "AKIA" + strings.ToUpper(hex.EncodeToString(sum[:]))[:16]
		l.aws.keys[accessKey] = principal{name: name, role: role}
		l.roleOf[name] = role
		timeout := 3 * time.Second
		if v, ok := r.Properties["Timeout"].(float64); ok {
			timeout = time.Duration(v) * time.Second
		}
		env := []string{
			// What Lambda sets in every execution environment.
			"AWS_REGION=" + laneRegion, "AWS_DEFAULT_REGION=" + laneRegion,
			"AWS_LAMBDA_FUNCTION_NAME=" + name, "AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
			fmt.Sprintf("AWS_LAMBDA_FUNCTION_MEMORY_SIZE=%v", r.Properties["MemorySize"]),
			"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/" + name, "AWS_LAMBDA_LOG_STREAM_NAME=lane",
			"AWS_ACCESS_KEY_ID=" + accessKey, "AWS_SECRET_ACCESS_KEY=lane-secret", "AWS_SESSION_TOKEN=lane-session",
			"_HANDLER=bootstrap", "LAMBDA_TASK_ROOT=" + filepath.Dir(bin), "TZ=:UTC",
			// The lane's own: every AWS endpoint is the lane's, and the
			// simulator's certificate is trusted. Nothing else of the
			// test's environment reaches the function.
			"AWS_ENDPOINT_URL=" + endpoint, "SSL_CERT_FILE=" + caFile,
			"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		}
		for k, v := range vars {
			s, ok := v.(string)
			if !ok {
				return fmt.Errorf("function %s: %s is a %T after resolution", name, k, v)
			}
			env = append(env, k+"="+s)
		}
		f := &lambdaFunction{name: name, arn: functionARN(name), binary: bin, env: env, timeout: timeout, logs: &syncBuffer{}}
		if err := f.start(); err != nil {
			return err
		}
		l.fns[name], l.byARN[f.arn] = f, f
	}
	return nil
}

// taskFunction is a function as a state machine's task: it notes which
// state machines a task token it receives belongs to, since SendTaskSuccess
// is authorised on the state machine that issued the token.
type taskFunction struct {
	f *lambdaFunction
	l *lane
}

func (t *taskFunction) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	if tok, ok := asl.TaskToken(ctx); ok {
		t.l.aws.mu.Lock()
		t.l.aws.tokenSMs[tok] = t.l.callbackMachines(t.f.arn)
		t.l.aws.mu.Unlock()
	}
	return t.f.Invoke(ctx, payload)
}

// callbackMachines are the state machines that invoke fn with a task token.
func (l *lane) callbackMachines(fn string) []string {
	var out []string
	for _, id := range l.tpl.ofType("AWS::StepFunctions::StateMachine") {
		def, subs, err := l.definition(id)
		if err != nil {
			continue
		}
		for k, v := range subs {
			if v == fn && strings.Contains(def, "waitForTaskToken") && strings.Contains(def, "${"+k+"}") {
				arn, _ := l.res.getAtt(id, "Arn")
				out = append(out, arn)
				break
			}
		}
	}
	return out
}

func (l *lane) definition(id string) (string, map[string]string, error) {
	p := l.tpl.Resources[id].Properties
	def, err := l.res.str(p["DefinitionString"])
	if err != nil {
		return "", nil, fmt.Errorf("state machine %s: DefinitionString: %w", id, err)
	}
	subsAny, err := l.res.resolve(p["DefinitionSubstitutions"])
	if err != nil {
		return "", nil, fmt.Errorf("state machine %s: DefinitionSubstitutions: %w", id, err)
	}
	subs := map[string]string{}
	if m, ok := subsAny.(map[string]any); ok {
		for k, v := range m {
			subs[k] = fmt.Sprint(v)
		}
	}
	return def, subs, nil
}

var placeholderRE = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`)

// createStateMachines registers every state machine with its
// substitutions resolved, and checks its role may do what its tasks do.
func (l *lane) createStateMachines() error {
	for _, id := range l.tpl.ofType("AWS::StepFunctions::StateMachine") {
		def, subs, err := l.definition(id)
		if err != nil {
			return err
		}
		for _, m := range placeholderRE.FindAllStringSubmatch(def, -1) {
			if _, ok := subs[m[1]]; !ok {
				return fmt.Errorf("state machine %s: ${%s} has no substitution", id, m[1])
			}
		}
		sm, err := asl.Parse([]byte(def), subs)
		if err != nil {
			return fmt.Errorf("state machine %s: %w", id, err)
		}
		name := l.res.named(id, "StateMachineName")
		arn, err := l.engine.CreateStateMachine(name, sm)
		if err != nil {
			return fmt.Errorf("state machine %s: %w", id, err)
		}
		l.machines[name] = arn
		roleRef, _ := l.tpl.Resources[id].Properties["RoleArn"].(map[string]any)["Fn::GetAtt"].([]any)
		if len(roleRef) != 2 {
			return fmt.Errorf("state machine %s: no role of the template", id)
		}
		role := roleRef[0].(string)
		pr := principal{name: name, role: role}
		for k, v := range subs {
			if !strings.Contains(def, "${"+k+"}") {
				continue
			}
			switch {
			case strings.HasPrefix(v, "arn:aws:lambda:"):
				if l.byARN[v] == nil {
					return fmt.Errorf("state machine %s: substitution %s names %s, which the template does not deploy", id, k, v)
				}
				if !l.iam.allows(pr, "lambda:InvokeFunction", v) {
					return fmt.Errorf("state machine %s: its role %s may not lambda:InvokeFunction %s (substitution %s)", id, role, v, k)
				}
				l.aws.record(call{Principal: name, Role: role, Action: "lambda:InvokeFunction", Resource: v, Allowed: true})
			case strings.HasPrefix(v, "arn:aws:states:") && strings.Contains(v, ":stateMachine:"):
				if !l.iam.allows(pr, "states:StartExecution", v) {
					return fmt.Errorf("state machine %s: its role %s may not states:StartExecution %s (substitution %s)", id, role, v, k)
				}
				l.aws.record(call{Principal: name, Role: role, Action: "states:StartExecution", Resource: v, Allowed: true})
			}
		}
	}
	return nil
}

func (a *awsEndpoint) record(c call) {
	a.mu.Lock()
	a.calls = append(a.calls, c)
	a.mu.Unlock()
}

var scheduleRE = regexp.MustCompile(`^rate\((\d+) minutes?\)$`)

// startSchedules runs each EventBridge Scheduler schedule on the lane's
// clock: it starts its state machine with its input, as its role may.
func (l *lane) startSchedules() error {
	for _, id := range l.tpl.ofType("AWS::Scheduler::Schedule") {
		p, err := l.res.resolve(l.tpl.Resources[id].Properties)
		if err != nil {
			return fmt.Errorf("schedule %s: %w", id, err)
		}
		props := p.(map[string]any)
		m := scheduleRE.FindStringSubmatch(fmt.Sprint(props["ScheduleExpression"]))
		if m == nil {
			return fmt.Errorf("schedule %s: the lane runs rate(N minutes) only, not %v", id, props["ScheduleExpression"])
		}
		var minutes int
		_, _ = fmt.Sscan(m[1], &minutes)
		target := props["Target"].(map[string]any)
		smARN, _ := target["Arn"].(string)
		input, _ := target["Input"].(string)
		role := l.iam.roleByARN(fmt.Sprint(target["RoleArn"]))
		if !l.iam.allows(principal{name: id, role: role}, "states:StartExecution", smARN) {
			return fmt.Errorf("schedule %s: its role may not states:StartExecution %s", id, smARN)
		}
		l.aws.record(call{Principal: id, Role: role, Action: "states:StartExecution", Resource: smARN, Allowed: true})
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			tk := l.clk.NewTicker(time.Duration(minutes) * time.Minute)
			defer tk.Stop()
			for {
				select {
				case <-l.stop:
					return
				case <-tk.Chan():
					_, _ = l.engine.StartExecution(context.Background(), smARN, "", []byte(input))
				}
			}
		}()
	}
	return nil
}

// problems lists what makes a run wrong beyond its outcome: denied calls,
// functions that could not start, events off their schema or off the
// registry.
func (l *lane) problems() []string {
	var out []string
	_, denied := l.aws.snapshot()
	for _, d := range denied {
		out = append(out, "denied: "+d.Principal+" "+d.Action+" "+d.Resource)
	}
	l.aws.mu.Lock()
	out = append(out, l.aws.faults...)
	l.aws.mu.Unlock()
	registered := map[string]bool{}
	for _, id := range l.tpl.ofType("AWS::EventSchemas::Schema") {
		registered[strings.TrimPrefix(l.res.prop(id, "SchemaName"), "maasflow@")] = true
	}
	bus := ""
	for _, id := range l.tpl.ofType("AWS::Events::EventBus") {
		bus = l.res.named(id, "Name")
	}
	for _, e := range l.aws.putEvents_() {
		if err := schemas.Validate(e.DetailType, []byte(e.Detail)); err != nil {
			out = append(out, fmt.Sprintf("event %s from %s: %v", e.DetailType, e.Principal, err))
		}
		if !registered[e.DetailType] {
			out = append(out, fmt.Sprintf("event %s from %s: no schema in the template's registry", e.DetailType, e.Principal))
		}
		if e.Bus != bus && e.Bus != busARN(bus) {
			out = append(out, fmt.Sprintf("event %s from %s: put on bus %q, not the template's %q", e.DetailType, e.Principal, e.Bus, bus))
		}
	}
	for _, f := range l.fns {
		if s := f.logs.String(); strings.Contains(s, "Runtime.ExitError") || strings.Contains(s, "is not set") {
			out = append(out, "function "+f.name+" failed to start: "+tail(s, 400))
		}
	}
	sort.Strings(out)
	return out
}

// functionLogs returns every function's output, for failure messages.
func (l *lane) functionLogs() string {
	var b strings.Builder
	names := make([]string, 0, len(l.fns))
	for n := range l.fns {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if s := l.fns[n].logs.String(); s != "" {
			fmt.Fprintf(&b, "--- %s\n%s\n", n, tail(s, 1500))
		}
	}
	return b.String()
}
