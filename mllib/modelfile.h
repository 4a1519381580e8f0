/*
 * modelfile.h -- the text form of a logistic-regression model (binary or
 * multinomial), parsed from memory so the fuzz target can reach the
 * parser without a file.  Internal to mllib; the public side is
 * em_ml_model_save / em_ml_model_load.
 */
#ifndef EM_ML_MODELFILE_H
#define EM_ML_MODELFILE_H

#include <stddef.h>

#include "ember_ml.h"

/* Parse a whole model file held in buf (len bytes; need not end in a NUL
 * or a newline), name standing for its path in messages.  The model, or
 * NULL with EM_ECORRUPT ("NAME:LINE: reason") or EM_ENOMEM. */
em_ml_model *ml_model_parse(const char *buf, size_t len, const char *name);

#endif
