#include "tephra/core/quantity.h"  // placeholder, replaced by the quantity implementation
