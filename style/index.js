import './common.css';
import './base.css';
import './mlflow.css';
