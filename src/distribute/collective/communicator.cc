// The one table of collective tags.
#include "lockstep/distribute/collective/communicator.h"

#include "lockstep/core/error.h"

namespace lockstep::distribute {

const char* tag_name(Tag tag) {
  switch (tag) {
    case Tag::kMetrics: return "kMetrics";
    case Tag::kInitialValues: return "kInitialValues";
    case Tag::kMerge: return "kMerge";
    case Tag::kInput: return "kInput";
    case Tag::kCheckpoint: return "kCheckpoint";
    case Tag::kPreemption: return "kPreemption";
    case Tag::kSavedModel: return "kSavedModel";
    case Tag::kCommandLine: return "kCommandLine";
    case Tag::kMappedGradients: return "kMappedGradients";
    case Tag::kEnd: break;
  }
  return "";
}

uint32_t bucket_tag(size_t bucket) {
  LS_CHECK(bucket + 1 < kBucketTagLimit, ValueError, "gradient bucket ", bucket, " is past the ",
           kBucketTagLimit - 1, " buckets collective tags allow; raise CommunicationOptions.bytes_per_pack");
  return static_cast<uint32_t>(bucket + 1);
}

CollectiveOptions collective_options(Tag tag, std::chrono::milliseconds timeout) {
  return {static_cast<uint32_t>(tag), timeout};
}

}  // namespace lockstep::distribute
