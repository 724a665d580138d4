// TFConfigClusterResolver: parses TF_CONFIG as TF and Kubeflow's TFJob write it and refuses a malformed one
// with a message that says where it is wrong and how to fix it.
#include <climits>
#include <cstdlib>
#include <tuple>

#include "cluster-impl.h"
#include "lockstep/distribute/cluster/cluster_resolver.h"

namespace lockstep::distribute {

using cluster_impl::a_type;
using cluster_impl::fail;
using cluster_impl::show;
using nlohmann::json;

namespace {

const char* const kExample =
    R"({"cluster": {"worker": ["host1:12345", "host2:12345"]}, "task": {"type": "worker", "index": 0}})";

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool is_blank(const std::string& s) {
  return s.find_first_not_of(" \t\r\n") == std::string::npos;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// TF's own tutorial writes "localhost: 12345", which TF accepts (its port parser skips spaces), so blanks
// around the host and the port are dropped; blanks inside a host name are still refused.
std::string strip_blanks(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return trim(address);
  return trim(address.substr(0, colon)) + ":" + trim(address.substr(colon + 1));
}

std::map<std::string, std::vector<std::string>> parse_jobs(const json& cluster) {
  if (!cluster.is_object())
    fail("TF_CONFIG: \"cluster\" is ", a_type(cluster),
         ", expected an object of job -> list of \"host:port\": write it as in ", kExample);
  if (cluster.empty())
    fail("TF_CONFIG: \"cluster\" has no jobs: list the tasks as in ", kExample,
         ", or unset TF_CONFIG to train on one worker");
  std::map<std::string, std::vector<std::string>> jobs;
  for (const auto& [job, tasks] : cluster.items()) {
    if (!tasks.is_array())
      fail("TF_CONFIG: cluster.", job, " is ", a_type(tasks),
           ", expected a list of \"host:port\" strings: write it as [\"host1:12345\", \"host2:12345\"]",
           tasks.is_object() ? " (TF's sparse {index: address} form is not supported)" : "");
    std::vector<std::string>& addresses = jobs[job];
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (!tasks[i].is_string())
        fail("TF_CONFIG: cluster.", job, "[", i, "] is ", a_type(tasks[i]), " (", show(tasks[i]),
             "), expected a \"host:port\" string: quote the address");
      addresses.push_back(strip_blanks(tasks[i].get<std::string>()));
    }
  }
  return jobs;
}

std::pair<std::string, int> parse_task(const json& task) {
  if (!task.is_object())
    fail("TF_CONFIG: \"task\" is ", a_type(task), ", expected an object: write {\"type\": \"worker\", \"index\": 0}");
  if (!task.contains("type"))
    fail("TF_CONFIG: \"task\" has no \"type\": add \"type\": \"worker\" (or \"chief\", \"evaluator\")");
  if (!task["type"].is_string())
    fail("TF_CONFIG: task.type is ", a_type(task["type"]), ", expected a string: write \"type\": \"worker\"");
  if (!task.contains("index"))
    fail("TF_CONFIG: \"task\" has no \"index\": add \"index\": N, this task's position in its job");
  const json& index = task["index"];
  if (index.is_string())
    fail("TF_CONFIG: task.index is the string ", show(index), ", expected a number: use a number, e.g. \"index\": 1");
  if (!index.is_number_integer())
    fail("TF_CONFIG: task.index is ", show(index), ", expected a whole number: use a number such as \"index\": 1");
  if (index.is_number_unsigned() ? index.get<uint64_t>() > INT_MAX : index.get<int64_t>() < INT_MIN)
    fail("TF_CONFIG: task.index ", show(index), " is out of range: set it to this task's position in its job");
  return {task["type"].get<std::string>(), index.get<int>()};
}

}  // namespace

TFConfigClusterResolver::TFConfigClusterResolver() : TFConfigClusterResolver(env_or_empty("TF_CONFIG")) {}

TFConfigClusterResolver::TFConfigClusterResolver(const std::string& tf_config_json) {
  if (is_blank(tf_config_json)) return;
  json config;
  try {
    config = json::parse(tf_config_json);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number such as 2e308
    std::string why = e.what();  // "[json.exception.parse_error.101] parse error at line 1, column 5: ..."
    if (const size_t p = why.find("] "); p != std::string::npos) why = why.substr(p + 2);
    fail("TF_CONFIG is not valid JSON (", why, "): fix the JSON, e.g. ", kExample);
  }
  if (!config.is_object()) fail("TF_CONFIG is ", a_type(config), ", expected an object: write it as ", kExample);

  if (config.contains("rpc_layer")) {
    const json& rpc = config["rpc_layer"];
    if (!rpc.is_string() || rpc.get<std::string>() != "grpc")
      fail("TF_CONFIG: rpc_layer is ", show(rpc),
           ", expected \"grpc\" (the only one lockstep speaks): set \"rpc_layer\": \"grpc\" or remove it");
  }
  if (config.contains("environment")) {
    // TF's string, or lockstep's object: {"name": <the string>, "cluster_token_file": ..., "tls_cert_file": ...,
    // "tls_key_file": ..., "tls_ca_file": ...}, every member optional.
    const json& env = config["environment"];
    const json name = env.is_object() ? env.value("name", json("local")) : env;
    const std::string value = name.is_string() ? name.get<std::string>() : "";
    if (value != "cloud" && value != "google" && value != "local")
      fail("TF_CONFIG: environment", env.is_object() ? ".name" : "", " is ", show(name),
           ", expected \"cloud\", \"google\" or \"local\": use one of them or remove it");
    environment_ = value == "local" ? "" : value;  // TF's default environment is "local"
    if (env.is_object()) {
      for (const auto& [key, file] : env.items()) {
        if (key == "name") continue;
        std::string* field = key == "cluster_token_file" ? &security_files_.cluster_token_file
                             : key == "tls_cert_file"    ? &security_files_.tls_cert_file
                             : key == "tls_key_file"     ? &security_files_.tls_key_file
                             : key == "tls_ca_file"      ? &security_files_.tls_ca_file
                                                         : nullptr;
        if (!field)
          fail("TF_CONFIG: environment has an unknown member \"", key, "\": the members are name, cluster_token_file, "
               "tls_cert_file, tls_key_file and tls_ca_file");
        if (!file.is_string() || file.get<std::string>().empty())
          fail("TF_CONFIG: environment.", key, " is ", show(file), ", expected a file name (a non-empty string)");
        *field = file.get<std::string>();
      }
    }
  }

  const bool has_cluster = config.contains("cluster"), has_task = config.contains("task");
  if (!has_cluster && !has_task) return;  // "{}": one local worker, as TF
  if (!has_cluster)
    fail("TF_CONFIG has a \"task\" but no \"cluster\": add the cluster every task shares, as in ", kExample,
         ", or unset TF_CONFIG to train on one worker");
  spec_ = ClusterSpec(parse_jobs(config["cluster"]));
  // As TF's MultiWorkerMirroredStrategy: a process given a cluster must know which task it is.
  if (!has_task)
    fail("TF_CONFIG has a \"cluster\" but no \"task\": add \"task\": {\"type\": \"worker\", \"index\": N} ",
         "naming this process's place in the cluster");
  std::string type;
  std::tie(type, task_id_) = parse_task(config["task"]);
  validate_cluster(spec_, type, task_id_, "TF_CONFIG");
  task_type_ = type;
}

}  // namespace lockstep::distribute
