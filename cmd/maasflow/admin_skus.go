package main

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// adminSKUView is one catalog entry.
type adminSKUView struct {
	ID          string    `json:"id"`
	GPUModel    string    `json:"gpu_model"`
	GPUsTotal   int       `json:"gpus_total"`
	Description string    `json:"description"`
	Active      bool      `json:"active"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func (r *adminRun) printSKU(resp *adminResponse) error {
	var s adminSKUView
	if err := resp.decode(&s); err != nil {
		return err
	}
	f := newAdminFields(r.env.stdout)
	f.add("ID", s.ID)
	f.add("GPU model", s.GPUModel)
	f.add("GPUs", strconv.Itoa(s.GPUsTotal))
	f.add("Active", strconv.FormatBool(s.Active))
	f.add("Description", s.Description)
	f.add("Created", adminTime(s.CreatedAt))
	f.add("Updated", adminTime(s.UpdatedAt))
	f.flush()
	return nil
}

func runSKUsCreate(ctx context.Context, r *adminRun, args []string) int {
	fs := r.flags()
	id := fs.String("id", "", "")
	model := fs.String("gpu-model", "", "")
	gpus := fs.Int("gpus-total", 0, "")
	desc := fs.String("description", "", "")
	active := fs.Bool("active", true, "")
	if _, err := r.parse(fs, args, 0); err != nil {
		return r.fail(err)
	}
	if err := requireFlags(fs, "id", "gpu-model", "gpus-total"); err != nil {
		return r.fail(err)
	}
	set := flagsSet(fs)
	body := map[string]any{"id": *id, "gpu_model": *model, "gpus_total": *gpus}
	if set["description"] {
		body["description"] = *desc
	}
	if set["active"] {
		body["active"] = *active
	}
	return r.call(ctx, http.MethodPost, adminSKUsPath, body, r.printSKU)
}

func runSKUsList(ctx context.Context, r *adminRun, args []string) int {
	if _, err := r.parse(r.flags(), args, 0); err != nil {
		return r.fail(err)
	}
	return r.call(ctx, http.MethodGet, adminSKUsPath, nil, func(resp *adminResponse) error {
		var l struct {
			Items []adminSKUView `json:"items"`
		}
		if err := resp.decode(&l); err != nil {
			return err
		}
		t := newAdminTable(r.env.stdout, "ID", "GPU_MODEL", "GPUS", "ACTIVE", "DESCRIPTION")
		for _, s := range l.Items {
			t.row(s.ID, s.GPUModel, strconv.Itoa(s.GPUsTotal), strconv.FormatBool(s.Active), s.Description)
		}
		t.flush()
		return nil
	})
}

func runSKUsGet(ctx context.Context, r *adminRun, args []string) int {
	pos, err := r.parse(r.flags(), args, 1)
	if err != nil {
		return r.fail(err)
	}
	return r.call(ctx, http.MethodGet, adminPath(adminSKUsPath, pos[0]), nil, r.printSKU)
}

func runSKUsPatch(ctx context.Context, r *adminRun, args []string) int {
	fs := r.flags()
	active := fs.Bool("active", true, "")
	desc := fs.String("description", "", "")
	pos, err := r.parse(fs, args, 1)
	if err != nil {
		return r.fail(err)
	}
	set := flagsSet(fs)
	body := map[string]any{}
	if set["active"] {
		body["active"] = *active
	}
	if set["description"] {
		body["description"] = *desc
	}
	if len(body) == 0 {
		return r.fail(usagef("nothing to change: give --active=true|false or --description"))
	}
	return r.call(ctx, http.MethodPatch, adminPath(adminSKUsPath, pos[0]), body, r.printSKU)
}

// adminAuditView is one audit entry.
type adminAuditView struct {
	ID            string    `json:"id"`
	Time          time.Time `json:"time"`
	Actor         string    `json:"actor"`
	Action        string    `json:"action"`
	Target        string    `json:"target"`
	Result        string    `json:"result"`
	CorrelationID string    `json:"correlation_id"`
}

func runAudit(ctx context.Context, r *adminRun, args []string) int {
	fs := r.flags()
	limit := fs.Int("limit", 0, "")
	if _, err := r.parse(fs, args, 0); err != nil {
		return r.fail(err)
	}
	q := url.Values{}
	if err := setLimit(fs, *limit, q); err != nil {
		return r.fail(err)
	}
	return r.callQuery(ctx, http.MethodGet, adminAuditPath, q, nil, func(resp *adminResponse) error {
		var l struct {
			Items []adminAuditView `json:"items"`
		}
		if err := resp.decode(&l); err != nil {
			return err
		}
		t := newAdminTable(r.env.stdout, "TIME", "ACTOR", "ACTION", "TARGET", "RESULT", "CORRELATION_ID")
		for _, e := range l.Items {
			t.row(adminTime(e.Time), e.Actor, e.Action, e.Target, e.Result, e.CorrelationID)
		}
		t.flush()
		return nil
	})
}
