package main

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/internal/aclfile"
)

// Sync creates the missing grants and deletes the file's roles' ALLOW
// bindings the file does not list. It returns how many of each it did.
func Sync(ctx context.Context, conn *cli.Conn, grants []aclfile.Grant) (created, deleted int, err error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(conn.Seeds...)}, conn.Opts...)...)
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	want := map[aclfile.Grant]bool{}
	for _, g := range grants {
		want[g] = true
	}
	have, err := describe(ctx, cl, aclfile.Roles(grants))
	if err != nil {
		return 0, 0, err
	}
	var add, drop []aclfile.Grant
	for g := range want {
		if !have[g] {
			add = append(add, g)
		}
	}
	for g := range have {
		if !want[g] {
			drop = append(drop, g)
		}
	}
	if err := create(ctx, cl, add); err != nil {
		return 0, 0, err
	}
	if err := remove(ctx, cl, drop); err != nil {
		return len(add), 0, err
	}
	return len(add), len(drop), nil
}

// describe lists the ALLOW bindings of the roles' principals.
func describe(ctx context.Context, cl *kgo.Client, roles []string) (map[aclfile.Grant]bool, error) {
	have := map[aclfile.Grant]bool{}
	for _, role := range roles {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAllow
		principal := "User:" + role
		req.Principal = &principal
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, fmt.Errorf("describe ACLs of %s: %w", principal, err)
		}
		for _, r := range resp.Resources {
			for _, a := range r.ACLs {
				if a.Principal == principal && a.Host == "*" {
					have[aclfile.Grant{Role: role, Resource: r.ResourceType, Pattern: r.ResourcePatternType, Name: r.ResourceName, Operation: a.Operation}] = true
				}
			}
		}
	}
	return have, nil
}

func create(ctx context.Context, cl *kgo.Client, gs []aclfile.Grant) error {
	if len(gs) == 0 {
		return nil
	}
	req := kmsg.NewPtrCreateACLsRequest()
	for _, g := range gs {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = g.Resource, g.Name, g.Pattern
		c.Principal, c.Host, c.Operation, c.PermissionType = g.Principal(), "*", g.Operation, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for i, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("create %s: %w", gs[i], err)
		}
	}
	return nil
}

func remove(ctx context.Context, cl *kgo.Client, gs []aclfile.Grant) error {
	if len(gs) == 0 {
		return nil
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	for _, g := range gs {
		f := kmsg.NewDeleteACLsRequestFilter()
		name, principal, host := g.Name, g.Principal(), "*"
		f.ResourceType, f.ResourceName, f.ResourcePatternType = g.Resource, &name, g.Pattern
		f.Principal, f.Host, f.Operation, f.PermissionType = &principal, &host, g.Operation, kmsg.ACLPermissionTypeAllow
		req.Filters = append(req.Filters, f)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for i, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("delete %s: %w", gs[i], err)
		}
	}
	return nil
}
