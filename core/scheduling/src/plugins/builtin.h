// The built-in plugins (docs/volcano-behaviour.md, "Plugins"), one file each in src/plugins/, and what they
// share. Internal to tephra_sched: the public way to make a plugin is PluginRegistry (framework.h). Each
// plugin answers only the hooks it declares in Hooks().
#pragma once

#include <memory>

#include "tephra/sched/framework.h"

namespace tephra::sched::plugins {

// -1, 0, 1 like a three-way comparison.
inline int Cmp(double a, double b) { return a < b ? -1 : (a > b ? 1 : 0); }

// Share of `used` in `total` on the most-used dimension (pods excluded: every task requests one).
double DominantShare(const Resource& used, const Resource& total);

std::unique_ptr<Plugin> NewGangPlugin(const PluginOption& option);  // "gang"
std::unique_ptr<Plugin> NewPriorityPlugin(const PluginOption& option);  // "priority"
std::unique_ptr<Plugin> NewConformancePlugin(const PluginOption& option);  // "conformance"
std::unique_ptr<Plugin> NewDrfPlugin(const PluginOption& option);  // "drf"
std::unique_ptr<Plugin> NewProportionPlugin(const PluginOption& option);  // "proportion"
std::unique_ptr<Plugin> NewOvercommitPlugin(const PluginOption& option);  // "overcommit"
std::unique_ptr<Plugin> NewPredicatesPlugin(const PluginOption& option);  // "predicates"
std::unique_ptr<Plugin> NewNodeorderPlugin(const PluginOption& option);  // "nodeorder"
std::unique_ptr<Plugin> NewBinpackPlugin(const PluginOption& option);  // "binpack"
std::unique_ptr<Plugin> NewTaskTopologyPlugin(const PluginOption& option);  // "task-topology"
std::unique_ptr<Plugin> NewNetworkTopologyAwarePlugin(const PluginOption& option);  // "network-topology-aware"

}  // namespace tephra::sched::plugins
