// The registries as a document: every Keras class lockstep has and its parameter table, as Markdown
// (docs/keras-classes.md, which `lockstep classes` prints).
#pragma once
#include <string>

namespace lockstep::keras {

std::string registries_markdown();

}  // namespace lockstep::keras
