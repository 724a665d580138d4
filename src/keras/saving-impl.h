// Forwards to saving/saving-impl.h for the sources that still include it from here (model.cc).
#pragma once
#include "saving/saving-impl.h"
